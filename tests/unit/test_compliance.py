"""kit.results.compliance: a log too large for mlperf-logging's checker (whose line regex is superlinear
on nested brackets) is a finding at once, never handed to the checker."""

from __future__ import annotations

import pytest

pytest.importorskip("mlperf_logging")

from kit.results.compliance import MAX_LINE_BRACKETS, MAX_LINE_BYTES, MAX_LOG_BYTES, check_mllog  # noqa: E402

RULESET = "mllog_ruleset.yaml"
HEAD = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "kit_pair", "value": '


def test_a_line_of_deeply_nested_brackets_is_refused_at_once(tmp_path):
    log = tmp_path / "org__m.mllog"
    depth = MAX_LINE_BYTES // 2 + 1
    log.write_text(HEAD + "[" * depth + "]" * depth + ', "metadata": {}}\n', encoding="utf-8")
    findings = check_mllog(log, RULESET)
    assert findings == [f"{log}: line too long (over {MAX_LINE_BYTES} bytes); not handed to the compliance checker"]


def test_a_short_line_nested_deeper_than_kit_writes_is_refused_too(tmp_path):
    log = tmp_path / "org__m.mllog"
    depth = MAX_LINE_BRACKETS + 1   # 1 KiB: under the length cap; 256 such lines would stall the checker
    log.write_text(HEAD + "[" * depth + "]" * depth + ', "metadata": {}}\n', encoding="utf-8")
    assert check_mllog(log, RULESET) == [
        f"{log}: line with over {MAX_LINE_BRACKETS} brackets (kit's own lines have a few dozen); not handed to the "
        "compliance checker"]


def test_a_log_over_the_size_cap_is_refused_at_once(tmp_path):
    log = tmp_path / "org__m.mllog"
    line = (HEAD + '"' + "x" * 1000 + '", "metadata": {}}\n').encode()
    log.write_bytes(line * (MAX_LOG_BYTES // len(line) + 1))
    findings = check_mllog(log, RULESET)
    assert findings == [f"{log}: log too large (over {MAX_LOG_BYTES} bytes); not handed to the compliance checker"]


def _logged(tmp_path, metrics, logged_value, logged_meta):
    import hashlib
    import json

    checkpoint = tmp_path / "en" / "org__m.json"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    checkpoint.write_text(json.dumps({"metrics": metrics}), encoding="utf-8")
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()   # a forger rewrites the logged digest
    lines = [{"key": "eval_accuracy", "value": logged_value, "metadata": logged_meta},
             {"key": "run_stop", "metadata": {"status": "success", "checkpoint_sha256": digest}}]
    checkpoint.with_suffix(".mllog").write_text("".join(f":::MLLOG {json.dumps(x)}\n" for x in lines), encoding="utf-8")
    return checkpoint


def test_metrics_unlike_those_the_job_logged_are_an_edit_even_with_the_digest_rewritten(tmp_path):
    from kit.results.compliance import edited_since_logged

    same = _logged(tmp_path / "a", {"accuracy": 0.5, "f1": 0.4, "n_items": 10}, 0.5, {"f1": 0.4, "n_items": 10})
    assert edited_since_logged(same) is None
    forged = _logged(tmp_path / "b", {"accuracy": 0.5, "f1": 0.9, "n_items": 10}, 0.5, {"f1": 0.4, "n_items": 10})
    assert edited_since_logged(forged) == ("metrics.f1 0.9 is not the 0.4 its job logged (eval_accuracy): "
                                           "the file was changed after the job wrote it")
    # a LightEval suite logs its first metric by name
    suite = _logged(tmp_path / "c", {"em": 0.25, "n_items": 4}, 0.75, {"metric": "em", "n_items": 4})
    assert "metrics.em 0.25 is not the 0.75" in edited_since_logged(suite)
