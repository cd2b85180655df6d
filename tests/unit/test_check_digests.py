"""`kit check` rules (kit.results.check) on their own: what each finding says."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kit.results import keys
from kit.results.keys import PairState
from kit.results.check import CheckInput, dataset_digests
from kit.results.checkpoint import CheckpointState

MANIFEST, FILE = "a" * 64, "b" * 64


def _findings(tmp_path: Path, **metadata: object) -> list[str]:
    """The dataset_digests messages for one complete checkpoint with this metadata (language en)."""
    benchmark = SimpleNamespace(manifest_sha256=MANIFEST, pinned_sha256=lambda language: FILE)
    data = {keys.METADATA: {keys.LANGUAGE: "en", keys.BENCHMARK_SHA256: FILE, **metadata}}
    inp = CheckInput(tmp_path, benchmark, [], frozenset(),  # type: ignore[arg-type]  # only the two digests are read
                     checkpoints={tmp_path / "en" / "org__m.json": CheckpointState(PairState.COMPLETE, data=data)})
    found = dataset_digests(inp)
    assert {f.key for f in found} <= {"metadata.manifest_sha256"}
    return [f.message for f in found]


@pytest.mark.parametrize("metadata", [{}, {keys.MANIFEST_SHA256: None}])
def test_a_manifest_digest_that_is_not_recorded_is_said_so_with_what_to_do(tmp_path, metadata):
    [message] = _findings(tmp_path, **metadata)
    assert message.startswith("not recorded") and "rerun the pair with kit" in message
    assert "differs" not in message


def test_a_manifest_digest_another_language_s_fix_changed_is_no_finding(tmp_path):
    """The pair's own language file is what it was measured on (held by benchmark_sha256): a manifest digest
    changed by a fix of another language's file fails nothing, as status, run and report hold it."""
    assert _findings(tmp_path, **{keys.MANIFEST_SHA256: "c" * 64}) == []


def test_the_benchmark_s_manifest_digest_passes(tmp_path):
    assert _findings(tmp_path, **{keys.MANIFEST_SHA256: MANIFEST}) == []
