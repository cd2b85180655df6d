"""The verdicts `kit reproduce` wrote (reproduce-<run>-<language>.json, kit.repro.verdict_report), read
back for the report: which result was rerun, where, and how closely it agreed. Verdict files are
untrusted input like checkpoints: a file that does not parse or lacks a field is listed, not used."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit import safejson

# the three verdicts of a rerun (kit.repro.compare decides them; a reader holds a verdict file to them)
REPRODUCED = "REPRODUCED"
WITHIN_TOLERANCE = "WITHIN TOLERANCE"
DIFFERENT = "DIFFERENT"
VERDICTS = (REPRODUCED, WITHIN_TOLERANCE, DIFFERENT)

VERDICT_GLOB = "reproduce-*.json"
# where `kit reproduce` writes by default, and where REPRODUCE.md has it write: a folder beside RESULTS
DEFAULT_DIRS_GLOB = "reproduce*"


@dataclass(frozen=True)
class Verdict:
    """One rerun of one result: its verdict, per-item agreement and the two environments."""

    path: Path
    result: str                   # the result file as given to `kit reproduce`
    language: str
    stem: str                     # the result's file name without .json
    verdict: str
    agreement: float
    tolerance: Mapping[str, Any] = field(default_factory=dict)
    recorded: Mapping[str, Any] = field(default_factory=dict)
    rerun: Mapping[str, Any] = field(default_factory=dict)
    deltas: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    run: str | None = None                                          # the roster's run name, when recorded
    deliberate: Mapping[str, Any] = field(default_factory=dict)     # what `kit reproduce --as` changed on purpose
    setups: Mapping[str, Any] = field(default_factory=dict)         # {"recorded": {...}, "rerun": {...}} (compare.setup)
    paired: Mapping[str, Any] | None = None                         # the paired change of the score (ResultKind.paired_change)
    differing: tuple[Mapping[str, Any], ...] = ()                   # the items whose prediction or output differ
    result_sha256: str | None = None                                # the bytes of the result it reran

    @property
    def key(self) -> str:
        """The record name (`<language>/<file>.json`) of the result it reran."""
        return f"{self.language}/{self.stem}.json"

    def hardware(self, side: str) -> str:
        """'gpu on site/runtime' of the recorded or rerun side."""
        env = self.recorded if side == "recorded" else self.rerun
        return f"{env.get('gpu') or 'no GPU'} on {env.get('site') or '?'}/{env.get('runtime') or '?'}"


def default_verdict_dirs(results_dir: Path) -> list[Path]:
    """The folders beside RESULTS named reproduce* (where REPRODUCE.md's commands write verdicts)."""
    parent = Path(results_dir).resolve().parent
    return sorted(p for p in parent.glob(DEFAULT_DIRS_GLOB) if p.is_dir() and not p.is_symlink())


def read_verdicts(dirs: Iterable[Path]) -> tuple[list[Verdict], list[tuple[Path, str]]]:
    """Every reproduce-*.json in these folders, each folder and each verdict once (a folder named twice, a
    copy of a verdict in another folder): (the verdicts read, sorted by result then file; [(file, why it
    was not read)])."""
    import hashlib

    found, bad = [], []
    folders: set[str] = set()
    seen: set[bytes] = set()
    for folder in dirs:
        real = os.path.realpath(folder)
        if real in folders:
            continue
        folders.add(real)
        for path in sorted(Path(folder).glob(VERDICT_GLOB)):
            try:
                raw = _verdict_bytes(path)
                digest = hashlib.sha256(raw).digest()
                if digest in seen:
                    continue
                seen.add(digest)
                found.append(_verdict(path, raw))
            except (OSError, ValueError, TypeError, KeyError) as exc:
                bad.append((path, f"{type(exc).__name__}: {exc}"[:300]))
    return sorted(found, key=lambda v: (v.key, str(v.path))), bad


def of_current_results(verdicts: Iterable[Verdict], result_path: Mapping[str, Path]
                       ) -> tuple[list[Verdict], list[tuple[Path, str]]]:
    """The verdicts whose result (by record name, `result_path`) is the file they reran, byte for byte; and
    each other one with why it is not shown (the result changed since, or the verdict names no digest)."""
    from kit.files import file_sha256

    kept, other = [], []
    digests: dict[str, str | None] = {}
    for v in verdicts:
        path = result_path.get(v.key)
        if path is None:
            continue
        if v.key not in digests:
            try:
                digests[v.key] = file_sha256(path)
            except OSError:
                digests[v.key] = None
        if v.result_sha256 is None:
            other.append((v.path, f"it names no result_sha256, so it cannot be tied to {v.key} as it is now "
                                  "(made by an earlier kit): run kit reproduce again"))
        elif v.result_sha256 != digests[v.key]:
            other.append((v.path, f"it reran another version of {v.key} (result_sha256 {v.result_sha256[:16]}), "
                                  "not the file there now"))
        else:
            kept.append(v)
    return kept, other


def _verdict_bytes(path: Path) -> bytes:
    if path.is_symlink() or not path.is_file():
        raise ValueError("not a regular file")
    return path.read_bytes()


def _verdict(path: Path, raw: bytes) -> Verdict:
    data = safejson.loads(raw.decode("utf-8"))
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    result, verdict, agreement = data["result"], data["verdict"], data["agreement"]
    if not isinstance(result, str) or not isinstance(verdict, str):
        raise TypeError("result and verdict must be strings")
    if isinstance(agreement, bool) or not isinstance(agreement, (int, float)) or not 0 <= agreement <= 1:
        raise ValueError(f"agreement {agreement!r} is not a fraction")
    _follows_from_its_figures(verdict, agreement, data)
    digest = data.get("result_sha256")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64):
        raise ValueError(f"result_sha256 {digest!r} is not a sha256")
    envs = data.get("environments")
    envs = envs if isinstance(envs, dict) else {}
    where = Path(result)
    setups = _mapping(data.get("setups"))
    differing = data.get("differing_items")
    return Verdict(path, result, where.parent.name, where.stem, verdict, float(agreement),
                   _mapping(data.get("tolerance")), _mapping(envs.get("recorded")), _mapping(envs.get("rerun")),
                   _mapping(data.get("metric_deltas")), str(data.get("note") or ""),
                   data["run"] if isinstance(data.get("run"), str) else None, _mapping(data.get("deliberate")),
                   {side: _mapping(setups.get(side)) for side in ("recorded", "rerun")}, _paired(data.get("paired")),
                   tuple(d for d in differing if isinstance(d, dict)) if isinstance(differing, list) else (), digest)


def _follows_from_its_figures(verdict: str, agreement: float, data: Mapping[str, Any]) -> None:
    """A ValueError unless the verdict is one kit decides and follows from the file's own figures: no item
    differs for REPRODUCED, the agreement is within the tolerance for WITHIN TOLERANCE (kit.repro.compare's
    rule; the metric bound is the kind's, checked where it was decided)."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict!r} is none of {', '.join(VERDICTS)}")
    differing = data.get("differing_items")
    tolerance = data.get("tolerance")
    bound = tolerance.get("agreement") if isinstance(tolerance, dict) else None
    if verdict == REPRODUCED and (agreement != 1 or differing):
        raise ValueError(f"it says {REPRODUCED} with an agreement of {agreement:.2%} and items that differ")
    if verdict == WITHIN_TOLERANCE and (isinstance(bound, bool) or not isinstance(bound, (int, float))
                                        or agreement < bound):
        raise ValueError(f"it says {WITHIN_TOLERANCE} with an agreement of {agreement:.2%} against a tolerance of "
                         f"{bound!r}")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _paired(value: Any) -> Mapping[str, Any] | None:
    """A verdict's paired change when each figure the drift table reads is a number; else None (not shown)."""
    if not isinstance(value, dict):
        return None
    f1 = value.get("f1")
    numbers = [value.get("items"), value.get("changed"), *(f1.get(k) for k in ("a", "b", "diff", "low", "high"))] \
        if isinstance(f1, dict) else [None]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) for n in numbers):
        return None
    if not 0 <= value["changed"] <= value["items"]:
        return None
    return value
