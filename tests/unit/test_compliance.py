"""kit.results.compliance: a log too large for mlperf-logging's checker (whose line regex is superlinear
on nested brackets) is a finding at once, never handed to the checker."""

from __future__ import annotations

import os

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


def _job_log(path, provenance_size: int = 40):
    """A log written the way a job writes one (kit.worker.mllog.PairLog), with a long provenance line."""
    from kit.worker.mllog import PairLog

    with PairLog(path) as log:
        c = log.constants
        log.event(c.SUBMISSION_BENCHMARK, "kit_lrb")
        log.event("kit_pair", {"run": "org/model", "language": "en", "task": "generate"})
        log.start(c.INIT_START)
        log.event("provenance", {"model": {"id": "org/model"}, "data": {}, "image": {},
                                 **{f"fact_{i}": "x" * 40 for i in range(provenance_size)}})
        log.end(c.INIT_STOP, metadata={"load_seconds": 1.5})
        log.start(c.RUN_START)
        log.event("batch_done", 0, metadata={"batch_size": 2, "seconds": 0.1})
        log.event(c.EVAL_ACCURACY, 0.5, metadata={"f1": 0.5, "n_items": 2})
        log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": "x.json", "checkpoint_sha256": "0" * 64})
    return path


def _variants(tmp_path):
    """Logs kit's reader and the checker's own must judge alike: a job's, and ones bent in every way a
    line can be (a prefix before the token, two tokens, bad JSON, no time, a line break inside, odd bytes)."""
    good = _job_log(tmp_path / "good.mllog").read_text(encoding="utf-8")
    lines = good.splitlines(keepends=True)
    yield "a job's log", good.encode()
    yield "a launcher prefix on every line", "".join(f"[1,0]<stdout>: {line}" for line in lines).encode()
    yield "two tokens on a line", (lines[0].rstrip("\n") + " " + lines[1]).encode() + "".join(lines[2:]).encode()
    yield "a line of bad JSON", "".join([*lines[:3], ":::MLLOG {not json\n", *lines[3:]]).encode()
    yield "a line without time_ms", "".join([*lines[:2], ':::MLLOG {"key": "x", "value": 1, "metadata": {}}\n',
                                             *lines[2:]]).encode()
    yield "a carriage return inside a line", "".join([lines[0].replace('"namespace"', '\r"namespace"'),
                                                      *lines[1:]]).encode()
    yield "bytes that are not UTF-8", b"\xff\xfe garbage\n" + good.encode()
    # JSON where orjson and Python's parser part ways: each line as Python's parser reads it
    for what, value in (("NaN", "NaN"), ("an integer past 64 bits", "1" + "0" * 25), ("a lone surrogate", '"\\ud800"'),
                        ("a float out of range", "1e400"), ("a duplicated key", '1, "value": 2'),
                        ("nesting past orjson's limit", "[" * 1100 + "]" * 1100)):
        yield f"a value of {what}", "".join([*lines[:2], f':::MLLOG {{"namespace": "", "time_ms": 5, "key": "x", '
                                                          f'"value": {value}, "metadata": {{}}}}\n', *lines[2:]]).encode()
    yield "no run_stop", "".join(lines[:-1]).encode()
    yield "an empty log", b""


def test_kits_reading_of_a_log_judges_as_the_checkers_own(tmp_path):
    import logging

    from kit.results import compliance
    from kit.results.kinds.lrb import LRB

    module = compliance._checker()
    config = str(compliance.ruleset_path(LRB.ruleset))
    logging.getLogger().setLevel(logging.CRITICAL)
    for n, (what, content) in enumerate(_variants(tmp_path)):
        log = tmp_path / f"variant-{n}.mllog"
        log.write_bytes(content)
        verdicts = []
        for check in (lambda c: c.check_file(str(log), config), lambda c: compliance._check_file(c, log, config)):
            checker = module.make_checker(compliance.USAGE, compliance.RULESET, quiet=True, werror=False)
            try:
                verdicts.append((check(checker), sorted(map(str, checker.overwritable.values())),
                                 sorted(map(str, checker.not_overwritable))))
            except Exception as exc:  # noqa: BLE001 - the checker raises on some logs: both must
                verdicts.append((type(exc).__name__, str(exc)))
        assert verdicts[0] == verdicts[1], what
    assert check_mllog(tmp_path / "variant-0.mllog", LRB.ruleset) == []   # a job's log passes


def test_a_ruleset_is_parsed_once_per_process_and_again_when_it_changes(tmp_path, monkeypatch):
    from kit.results import compliance

    module = compliance._checker()
    loads = []
    real = module.yaml._module.load
    monkeypatch.setattr(module.yaml._module, "load", lambda stream, Loader=None: loads.append(1) or real(stream, Loader=Loader))
    ruleset = tmp_path / "rules.yaml"
    source = compliance.ruleset_path("mllog_ruleset.yaml").read_text(encoding="utf-8")
    ruleset.write_text(source, encoding="utf-8")
    monkeypatch.setattr(compliance, "ruleset_path", lambda name: ruleset)
    logs = [_job_log(tmp_path / f"job-{i}.mllog") for i in range(3)]
    assert [check_mllog(log, "rules") for log in logs] == [[], [], []]
    assert len(loads) == 1
    ruleset.write_text(source + "\n# edited\n", encoding="utf-8")
    os.utime(ruleset, ns=(1, 1))
    assert check_mllog(logs[0], "rules") == [] and len(loads) == 2


_BENT_RULES = '''
- BEGIN:
    CODE: " s.update({'seen': 0}) "
- KEY:
    NAME: submission_benchmark
    REQ: EXACTLY_ONE
    CHECK: " v['value'] == 'kit_lrb' "
- KEY:
    NAME: kit_pair
    REQ: EXACTLY_ONE
    CHECK:
      - " v['value'].get('language') == 'en' "
      - " v['value'].get('task') == 'score' "
    PRE: " s['seen'] += 1 "
- KEY:
    NAME: init_start
    REQ: EXACTLY_ONE
    CHECK: " v['value'] == "
- KEY:
    NAME: batch_done
    REQ: AT_LEAST_ONE
    FIRST_CHECK: " v['metadata']['batch_size'] > 5 "
    ATLEAST_ONE_CHECK: " v['metadata']['seconds'] > 1 "
    POST: " s['seen'] += "
- KEY:
    NAME: eval_accuracy
    REQ: EXACTLY_ONE
    CHECK: " v['metadata']['no_such_key'] "
- END:
    PRE: " s['ended'] = s['seen'] * 2 "
    CHECK: " s['ended'] == 3 "
'''


@pytest.mark.parametrize("rules", ["kit's own", "bent"])
def test_rules_compiled_once_judge_every_log_as_the_checker_s_own_reading(tmp_path, monkeypatch, rules):
    """Findings (pass or fail, and every message, which quotes the failed test's text) are the checker's own,
    for kit's ruleset and one whose tests fail, raise, do not compile, come as lists and run at the end."""
    import logging
    import types

    import yaml

    from kit.results import compliance

    module = compliance._checker()
    config = tmp_path / "rules.yaml"
    config.write_text(compliance.ruleset_path(RULESET).read_text(encoding="utf-8") if rules == "kit's own"
                      else _BENT_RULES, encoding="utf-8")
    logging.getLogger().setLevel(logging.CRITICAL)
    logs = [(what, tmp_path / f"v{n}.mllog") for n, (what, _) in enumerate(_variants(tmp_path))]
    for (_, log), (_, content) in zip(logs, _variants(tmp_path)):
        log.write_bytes(content)
    judged = {}
    for reading in ("plain yaml", "compiled once"):
        loader = yaml if reading == "plain yaml" else compliance._ParsedOnce(yaml)
        monkeypatch.setattr(module, "yaml", loader)
        judged[reading] = []
        for _ in range(2):   # and the same again from the parsed copy
            for what, log in logs:
                checker = module.make_checker(compliance.USAGE, compliance.RULESET, quiet=True, werror=False)
                try:
                    ok = checker.check_file(str(log), str(config))
                except Exception as exc:  # noqa: BLE001 - the checker raises on some logs: both readings must
                    judged[reading].append((what, type(exc).__name__, str(exc)))
                    continue
                judged[reading].append((what, ok, sorted(map(str, checker.overwritable.values())),
                                        sorted(map(str, checker.not_overwritable))))
    assert judged["compiled once"] == judged["plain yaml"]
    judged_logs = [verdict for verdict in judged["plain yaml"] if len(verdict) == 4]
    assert any(ok for _, ok, *_ in judged_logs) == (rules == "kit's own")   # the bent rules pass no log
    assert any(not ok and (messages[0] or messages[1]) for _, ok, *messages in judged_logs)
    with open(config) as fh:   # what the checker's eval and exec are handed: compiled once, not the text
        parsed = compliance._ParsedOnce(yaml).load(fh, Loader=yaml.BaseLoader)
    checks = [record["KEY"]["CHECK"] for record in parsed if "KEY" in record and "CHECK" in record["KEY"]]
    compiled = [c.strip() for check in checks for c in (check if isinstance(check, list) else [check])]
    assert compiled and sum(isinstance(c, types.CodeType) for c in compiled) == len(compiled) - (rules == "bent")
    if rules == "bent":
        text = "\n".join(m for verdict in judged_logs for messages in verdict[2:] for m in messages)
        assert "Failed executing CHECK code" in text and "failed test:  v['value'].get('task') == 'score'" in text


def test_a_ruleset_handed_out_is_a_copy_the_checker_may_change_freely():
    """What _ParsedOnce hands each check equals a deep copy of the parsed ruleset, shares no dict or list
    with it or with the next copy, and keeps a YAML alias one object, as deepcopy does."""
    import copy

    import yaml

    from kit.results import compliance

    source = compliance.ruleset_path(RULESET).read_text(encoding="utf-8")
    parsed = compliance._compiled_rules(yaml.safe_load(source + "\n- KEY: &shared {NAME: a, REQ: [x]}\n- OTHER: *shared\n"))
    first, second = compliance._fresh_copy(parsed), compliance._fresh_copy(parsed)
    assert first == copy.deepcopy(parsed) == parsed

    def containers(value):
        if isinstance(value, (dict, list)):
            yield value
            for inner in value.values() if isinstance(value, dict) else value:
                yield from containers(inner)

    originals = {id(c) for c in containers(parsed)}
    assert not originals & {id(c) for c in containers(first)}
    assert not {id(c) for c in containers(first)} & {id(c) for c in containers(second)}
    assert first[-1]["OTHER"] is first[-2]["KEY"] and first[-2]["KEY"]["REQ"] is first[-1]["OTHER"]["REQ"]
    first[-2]["KEY"]["REQ"].append("y")
    assert parsed[-2]["KEY"]["REQ"] == ["x"]


def test_the_line_parser_s_json_is_json_loads_for_anything_it_may_be_handed():
    """Text without options goes through safejson.loads_as_json; bytes, or options, to json.loads itself."""
    import json

    from kit.results.compliance import _SameJson

    same = _SameJson()
    assert same.loads('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    assert same.loads(b'{"a": 1}') == {"a": 1}
    assert same.loads('{"a": 1.5}', parse_float=str) == {"a": "1.5"}
    assert same.JSONDecodeError is json.JSONDecodeError


def test_a_log_that_cannot_be_read_is_said_to_be_unreadable_not_empty(tmp_path, monkeypatch):
    """A log kit may not read (another user's, mode 600) is no log that records nothing: the reason says
    it cannot be read, and why."""
    import errno

    from kit.results import compliance

    checkpoint = tmp_path / "en" / "org__m.json"
    checkpoint.parent.mkdir()
    checkpoint.write_text("{}")
    checkpoint.with_suffix(".mllog").write_text(":::MLLOG {}\n")

    def refused(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(compliance, "open", refused, raising=False)
    assert compliance.edited_since_logged(checkpoint) == "its log org__m.mllog cannot be read (Permission denied)"
