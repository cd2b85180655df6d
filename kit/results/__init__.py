"""Checkpoint schema, validation, atomic store, status, report."""
