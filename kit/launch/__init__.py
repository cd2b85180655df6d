"""Launching jobs: job requests, job scripts, runtimes, schedulers, submission."""
