"""Fixtures of the fast tier shared across modules: the fake OAR commands and an idle squeue (the
real OAR and Slurm run in the integration and e2e tiers)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

FAKE = r'''#!PYTHON
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
tool = os.path.basename(sys.argv[0])
state_file = os.path.join(here, "state.json")
state = json.load(open(state_file))
with open(os.path.join(here, "calls.jsonl"), "a") as fh:
    fh.write(json.dumps({"tool": tool, "argv": sys.argv[1:], "env": sorted(os.environ)}) + "\n")
canned = state.get(tool)
if canned:
    sys.stdout.write(canned.get("stdout", "")); sys.stderr.write(canned.get("stderr", ""))
    sys.exit(canned.get("rc", 0))
if tool == "oarsub":
    n = int(sys.argv[sys.argv.index("--array") + 1]) if "--array" in sys.argv else 1
    first = state.setdefault("next_id", 100)
    print("[ADMISSION RULE] Modify resource description with type constraints")
    for i in range(n):
        print(f"OAR_JOB_ID={first + i}")
        name = sys.argv[sys.argv.index("-n") + 1] if "-n" in sys.argv else ""
        state.setdefault("jobs", {})[str(first + i)] = {"state": "Waiting", "array_index": i + 1, "name": name}
    if n > 1:
        print(f"OAR_ARRAY_ID={first}")
    state["next_id"] = first + n
    json.dump(state, open(state_file, "w"))
elif tool == "oardel":   # --signal SIGTERM: the worker exits 143; plain: OAR's kill
    signalled = sys.argv[1:3] == ["--signal", "SIGTERM"]
    for j in sys.argv[3:] if signalled else sys.argv[1:]:
        if j in state.get("jobs", {}):
            state["jobs"][j].update({"state": "Terminated", "exit_code": 143 << 8, "events": [{"type": "SIGNAL_SIGTERM"}]}
                                    if signalled else {"state": "Error", "events": [{"type": "FRAG_JOB_REQUEST"}]})
    json.dump(state, open(state_file, "w"))
elif tool == "squeue":   # a Slurm site with no live job (a test's slurm site must not ask a real Slurm)
    print(json.dumps({"jobs": []}))
elif tool == "oarstat":   # -j ID...: those jobs; -u: your jobs not finished
    ids = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "-j"]
    if "-u" in sys.argv:
        ids = [j for j, info in state.get("jobs", {}).items() if info.get("state") not in ("Terminated", "Error")]
    jobs = {j: state.get("jobs", {})[j] for j in ids if j in state.get("jobs", {})}
    if jobs:
        print(json.dumps(jobs, indent=3))
'''


class FakeOar:
    """Fake OAR commands in a folder put first on PATH."""

    def __init__(self, folder: Path) -> None:
        self.bin = folder
        folder.mkdir(parents=True, exist_ok=True)
        for tool in ("oarsub", "oarstat", "oardel", "squeue"):
            path = folder / tool
            path.write_text(FAKE.replace("PYTHON", sys.executable))
            path.chmod(0o755)
        self.state = {}

    @property
    def state(self) -> dict:
        return json.loads((self.bin / "state.json").read_text())

    @state.setter
    def state(self, value: dict) -> None:
        (self.bin / "state.json").write_text(json.dumps(value))

    def calls(self, tool: str | None = None) -> list[dict]:
        path = self.bin / "calls.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        return [r for r in rows if tool is None or r["tool"] == tool]


@pytest.fixture
def fake_oar(tmp_path, monkeypatch) -> FakeOar:
    """Fake oarsub/oarstat/oardel (and an idle squeue) first on PATH; `.state` sets their answers,
    `.calls()` lists their uses."""
    fake = FakeOar(tmp_path / "fakebin")
    monkeypatch.setenv("PATH", f"{fake.bin}:{os.environ['PATH']}")
    return fake
