"""A rerun whose worker fails says why: the error lines of its log (an engine's root cause, printed before
its last word) and where the whole log was kept, not only the last few hundred characters."""

from __future__ import annotations

from pathlib import Path

from kit.repro.rerun import failure_summary, keep_log

VLLM_LOG = "\n".join([
    *(f"INFO 12-03 loader.py:{n}] loading weights, step {n}" for n in range(200)),
    "(EngineCore_DP0 pid=42) ERROR 12-03 core.py:700] EngineCore failed to start.",
    "Traceback (most recent call last):",
    '  File "vllm/v1/engine/core.py", line 690, in run_engine_core',
    "ValueError: 4.00 GiB of KV cache is needed, and only 1.00 GiB is available",
    *(f"INFO 12-03 shutdown.py:{n}] closing worker {n} of the engine core" for n in range(80)),
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
])


def test_the_root_cause_before_the_last_word_is_in_the_message():
    said = failure_summary(VLLM_LOG)
    assert "ValueError: 4.00 GiB of KV cache is needed" in said
    assert said.index("ValueError") < said.index("RuntimeError: Engine core initialization failed")
    assert VLLM_LOG.index("ValueError") < len(VLLM_LOG) - 2000       # beyond any tail of the log
    assert len(said) < 2000


def test_a_log_without_error_lines_gives_its_end_and_an_empty_one_says_so():
    assert failure_summary("all good\nbut nothing written\n") == "its last lines: all good but nothing written"
    assert failure_summary("") == "no output"
    long = "\n".join(f"line {n} of the worker, loading weights at revision abc" for n in range(50))
    said = failure_summary(long)
    assert said.startswith("its last lines: line ") and said.endswith("line 49 of the worker, loading weights at "
                                                                       "revision abc")   # whole lines only


def test_the_worker_s_own_error_line_keeps_its_suggestion_without_a_second_fix():
    said = failure_summary("loading\nkit: error: model 'org/m' at revision abc is not staged; fix: kit weights stage\n")
    assert said == ("errors in its log: kit: error: model 'org/m' at revision abc is not staged; the worker "
                    "suggests: kit weights stage")
    assert "fix:" not in said


def test_the_whole_log_is_kept_where_the_user_can_read_it():
    path = Path(keep_log(VLLM_LOG))
    try:
        assert path.read_text(encoding="utf-8") == VLLM_LOG and path.name.startswith("kit-rerun-")
    finally:
        path.unlink()
