"""`python -m bench`: kit's benchmark suite (bench/suite.py)."""

import sys

from bench.suite import main

sys.exit(main())
