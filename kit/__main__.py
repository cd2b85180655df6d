"""`python -m kit` runs the CLI (used by job scripts for the host runtime)."""

from kit.cli.main import main

# The guard matters: engines that start worker processes with "spawn" (vLLM on GPU)
# re-import the main module, which must not run the CLI again.
if __name__ == "__main__":
    main()
