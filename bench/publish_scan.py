"""How fast `kit publish` looks for credentials (kit.results.secrets), against detect-secrets' own
file scan with the same plugins, on release-like content: checkpoint JSON with prompts, answers and
sha256 digests. kit runs each detector's expressions over whole blocks, behind literal gates read from
the expressions; detect-secrets runs every plugin and filter line by line.

    python -m bench.publish_scan [--mb 32]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

WORDS = ("the model answer is yes no toxic not label prompt language because this text contains a "
         "question about the weather and a reply that stays polite").split()


def release_like(path: Path, megabytes: float) -> None:
    """A checkpoint-like JSON file of about `megabytes` MB."""
    rng = random.Random(7)
    rows, size, i = [], 0, 0
    while size < megabytes * 1e6:
        row = {"id": i, "prompt": " ".join(rng.choices(WORDS, k=40)), "answer": " ".join(rng.choices(WORDS, k=20)),
               "sha256": "".join(rng.choices("0123456789abcdef", k=64)), "parsed": rng.choice(["yes", "no"])}
        rows.append(row)
        size += len(json.dumps(row)) + 4
        i += 1
    path.write_text(json.dumps(rows, indent=1))


def main(argv: list[str] | None = None) -> int:
    """Print MB/s of both scanners and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=32, help="size of the scanned file (kit); detect-secrets "
                        "scans a 2 MB sample of the same content")
    args = parser.parse_args(argv)
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    from kit.results.secrets import scan_folder

    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp, "big"), Path(tmp, "small")
        big.mkdir(), small.mkdir()
        release_like(big / "checkpoint.json", args.mb)
        release_like(small / "checkpoint.json", 2)
        t = time.perf_counter()
        found = scan_folder(big)
        kit_s = time.perf_counter() - t
        kit_rate = (big / "checkpoint.json").stat().st_size / 1e6 / kit_s
        with default_settings():
            collection = SecretsCollection()
            t = time.perf_counter()
            collection.scan_file(str(small / "checkpoint.json"))
            ds_s = time.perf_counter() - t
        ds_rate = (small / "checkpoint.json").stat().st_size / 1e6 / ds_s
    print(f"kit.results.secrets   {kit_rate:8.1f} MB/s  ({args.mb:.0f} MB in {kit_s:.1f} s, {len(found)} findings)")
    print(f"detect-secrets scan   {ds_rate:8.2f} MB/s  (2 MB in {ds_s:.1f} s, {len(list(collection))} findings)")
    print(f"ratio                 {kit_rate / ds_rate:8.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
