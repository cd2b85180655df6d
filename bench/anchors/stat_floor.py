"""The floor of a warm answer (status or verify with nothing changed): Python's start-up and a stat of
every checkpoint of a results tree and of the :::MLLOG log beside it, which is how any cache notices a
changed file. Keeps nothing.

    python bench/anchors/stat_floor.py RESULTS
"""

import os
import sys

count = 0
with os.scandir(sys.argv[1]) as languages:
    for language in languages:
        if not language.is_dir(follow_symlinks=False):
            continue
        with os.scandir(language.path) as files:
            for entry in files:
                if entry.name.endswith(".json"):
                    os.stat(entry.path)
                    try:
                        os.lstat(entry.path[:-5] + ".mllog")
                    except OSError:
                        pass
                    count += 1
print(count)
