"""`python -m kit` runs the CLI (used by job scripts for the host runtime)."""

from kit.cli.main import main

main()
