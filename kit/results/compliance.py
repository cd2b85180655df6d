"""Run mlperf-logging's compliance checker with kit's ruleset over one pair's :::MLLOG file."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from kit import safejson
from kit.errors import MissingExtraError

USAGE = "training"      # the checker only accepts training|hpc; the ruleset version only picks the line parser
RULESET = "6.1.0"


def ruleset_path(ruleset: str) -> Path:
    """One of kit's shipped compliance YAMLs (each benchmark kind names its own: ResultKind.ruleset)."""
    return Path(str(resources.files("kit") / "defaults" / ruleset))


MLLOG_PREFIX = ":::MLLOG "


def run_stop_checkpoint_sha256(log: Path) -> str | None:
    """The checkpoint digest the job wrote in the log's last run_stop line; None when it wrote none
    (or the log cannot be read)."""
    found = None
    try:
        lines = Path(log).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        if not line.startswith(MLLOG_PREFIX):
            continue
        try:
            entry = safejson.loads(line[len(MLLOG_PREFIX):])
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("key") == "run_stop":
            meta = entry.get("metadata")
            value = meta.get("checkpoint_sha256") if isinstance(meta, dict) else None
            found = value if isinstance(value, str) else None
    return found


def check_mllog(log: Path, ruleset: str) -> list[str]:
    """Problems the compliance checker finds in one pair's log under `ruleset` (empty when it passes)."""
    try:
        from mlperf_logging.compliance_checker import mlp_compliance
    except ImportError:
        raise MissingExtraError("kit check's MLPerf log rules", "mlperf_logging", "worker") from None
    if not Path(log).is_file():
        return [f"{log}: no :::MLLOG file beside the checkpoint"]
    checker = mlp_compliance.make_checker(USAGE, RULESET, quiet=True, werror=False)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.CRITICAL)  # the checker logs through the root logger; keep our output to the findings
    try:
        ok = checker.check_file(str(log), str(ruleset_path(ruleset)))
    except Exception as exc:  # noqa: BLE001 - a malformed log can make the checker raise
        return [f"{log}: compliance checker failed: {type(exc).__name__}: {exc}"]
    finally:
        root.setLevel(level)
    if ok:
        return []
    messages = [*checker.overwritable.values(), *checker.not_overwritable]
    return [f"{log}: " + " ".join(str(m).split())[:300] for m in messages] or [f"{log}: FAILED"]
