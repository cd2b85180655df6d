"""kit.results.compliance: a log too large for mlperf-logging's checker (whose line regex is superlinear
on nested brackets) is a finding at once, never handed to the checker."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("mlperf_logging")

from kit.results.compliance import MAX_LINE_BYTES, MAX_LOG_BYTES, check_mllog  # noqa: E402

RULESET = "mllog_ruleset.yaml"
HEAD = ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "kit_pair", "value": '


def test_a_line_of_deeply_nested_brackets_is_refused_at_once(tmp_path):
    log = tmp_path / "org__m.mllog"
    depth = MAX_LINE_BYTES // 2 + 1
    log.write_text(HEAD + "[" * depth + "]" * depth + ', "metadata": {}}\n', encoding="utf-8")
    started = time.monotonic()
    findings = check_mllog(log, RULESET)
    assert findings == [f"{log}: line too long (over {MAX_LINE_BYTES} bytes); not handed to the compliance checker"]
    assert time.monotonic() - started < 5


def test_a_log_over_the_size_cap_is_refused_at_once(tmp_path):
    log = tmp_path / "org__m.mllog"
    line = (HEAD + '"' + "x" * 1000 + '", "metadata": {}}\n').encode()
    log.write_bytes(line * (MAX_LOG_BYTES // len(line) + 1))
    started = time.monotonic()
    findings = check_mllog(log, RULESET)
    assert findings == [f"{log}: log too large (over {MAX_LOG_BYTES} bytes); not handed to the compliance checker"]
    assert time.monotonic() - started < 5
