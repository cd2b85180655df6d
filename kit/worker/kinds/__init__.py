"""The worker side of each benchmark kind (kit.config.kinds registers them): how one pair runs
through an engine. The shard loop (kit.worker.shard) does the rest for every kind."""
