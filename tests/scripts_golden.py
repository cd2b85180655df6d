"""What the job-script tests share: hostile values (each must reach its command literally and never
run) and the golden-file check (KIT_UPDATE_GOLDEN=1 rewrites a golden file from the rendering)."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "unit" / "golden"

# command substitution, backticks, quotes, a newline, a path escape, a command separator, a space, a variable
HOSTILE = ["$(touch PWNED1)", "`touch PWNED2`", "a'b\"c", "x\ny", "../../etc/passwd", "; touch PWNED3 #", "sp ace",
           "${HOME}"]


def assert_golden(text: str, name: str) -> None:
    """`text` must equal tests/unit/golden/NAME (rewritten from `text` when KIT_UPDATE_GOLDEN=1)."""
    golden = GOLDEN / name
    if os.environ.get("KIT_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert golden.is_file(), f"no golden file {golden}; KIT_UPDATE_GOLDEN=1 writes it"
    assert text == golden.read_text(), f"rendered script differs from {golden}; KIT_UPDATE_GOLDEN=1 rewrites it"
