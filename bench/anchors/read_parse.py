"""The limit of the control plane: read and json.loads every checkpoint of a results tree, keep nothing.

    python bench/anchors/read_parse.py RESULTS
"""

import json
import sys
from pathlib import Path

count = 0
for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    json.loads(path.read_bytes())
    count += 1
print(count)
