"""The worker: runs inside a backend image, one pair at a time; imports config, plan and results only."""
