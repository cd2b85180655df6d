"""Schedulers: one module per scheduler (local, slurm, oar) behind a registry."""
