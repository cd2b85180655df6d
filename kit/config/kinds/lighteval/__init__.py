"""The LightEval benchmark kind's data: a suite's benchmark.toml, its tasks module and JSONL data."""
