"""The limit of the control plane: read and parse every checkpoint of a results tree, keep nothing.
With `orjson`, the same with kit's parser (its `fast` extra): the gap between the two is what orjson bought.

    python bench/anchors/read_parse.py RESULTS [json|orjson]
"""

import json
import sys
from pathlib import Path

if len(sys.argv) > 2 and sys.argv[2] == "orjson":
    import orjson

    parse = orjson.loads
else:
    parse = json.loads
count = 0
for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    parse(path.read_bytes())
    count += 1
print(count)
