"""kit: containerized reproducibility kit for LLM benchmark sweeps on HPC clusters."""

__version__ = "0.1.0"
