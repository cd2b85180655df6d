"""Container runtimes: how a job runs `kit shard` (apptainer, pyxis, docker, host)."""
