"""The same limit with kit's parser: read every checkpoint of a results tree and parse it with orjson
(kit's `fast` extra), keep nothing. What orjson bought is the gap between this and read_parse.py.

    python bench/anchors/read_parse_orjson.py RESULTS
"""

import sys
from pathlib import Path

import orjson

count = 0
for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    orjson.loads(path.read_bytes())
    count += 1
print(count)
