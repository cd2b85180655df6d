"""`kit` with the transformers engine replaced by a stub that answers "yes" at once: the fault tests
run the real `kit shard` (claims, signals, probes, logs, checkpoints) with no model to load.

    python stub_worker.py [-m kit] shard ...    (the -m kit of a site's `python` wrapper is dropped)

STUB_DIR (a folder) gets a `loaded` marker when a model would load, a `started` marker and one
line in `pairs-<pid>` per pair evaluated; with STUB_WAIT_FOR set, each pair waits until that file
exists, so a test can signal, fill the disk or start a second worker while a pair is in flight.
With STUB_IMPORT naming a module in STUB_DIR, loading the model imports it (as an engine imports
its libraries), so a test can signal while an import is in progress."""

from __future__ import annotations

import importlib
import os
import sys
import time
from pathlib import Path

from kit.worker.backends.base import ENGINES, Backend, Generation


class StubEngine(Backend):
    """Loads nothing; every prompt gets "yes"."""

    def load(self) -> None:
        (Path(os.environ["STUB_DIR"]) / "loaded").touch()
        if os.environ.get("STUB_IMPORT"):
            sys.path.insert(0, os.environ["STUB_DIR"])
            importlib.import_module(os.environ["STUB_IMPORT"])

    def versions(self) -> dict[str, str | None]:
        return {"stub": "1"}

    def generate(self, prompts: list[str]) -> list[Generation]:
        folder = Path(os.environ["STUB_DIR"])
        with open(folder / f"pairs-{os.getpid()}", "a", encoding="utf-8") as fh:
            fh.write(f"{len(prompts)}\n")
        (folder / "started").touch()
        wait = os.environ.get("STUB_WAIT_FOR")
        while wait and not Path(wait).exists():
            time.sleep(0.05)
        return [Generation("yes", False, 1) for _ in prompts]


if __name__ == "__main__":
    ENGINES._classes["transformers"] = StubEngine
    sys.modules["torch"] = None   # type: ignore[assignment]  # the hardware facts then skip torch's 2 s import
    args = sys.argv[1:]
    if args[:2] == ["-m", "kit"]:
        args = args[2:]
    from kit.cli.main import main

    main(args)
