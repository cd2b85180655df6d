"""kit's benchmarks: `python -m bench` (the suite, bench/suite.py) and bench/weights_load.py."""
