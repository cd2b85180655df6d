"""Commands are parse, call, render: one renderer prints an Outcome and derives the envelope's
status word and the exit code from it; no command module decides them apart."""

from __future__ import annotations

import ast
import errno
import os
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kit.cli.outcome import Outcome, render

CLI = Path(__file__).resolve().parents[2] / "kit" / "cli"


def _command(outcome: Outcome):
    @click.command()
    @click.option("--json", "as_json", is_flag=True)
    def cmd(as_json: bool) -> None:
        render(outcome, as_json)
    return cmd


@pytest.mark.parametrize("failed,errors,status,code", [
    (False, [], "ok", 0),
    (True, [], "failed", 1),
    (False, ["site a: checkpoints not read"], "error", 1),
    (True, ["site a: checkpoints not read"], "error", 1),
])
def test_the_status_word_and_exit_code_come_from_the_outcome(failed, errors, status, code):
    outcome = Outcome("status", {"n": 3}, ["one", "two"], failed=failed, errors=errors)
    as_json = CliRunner().invoke(_command(outcome), ["--json"])
    body = json.loads(as_json.stdout)
    assert (body["status"], body["data"], body["errors"], body["command"]) == (status, {"n": 3}, errors, "status")
    assert as_json.exit_code == code
    text = CliRunner().invoke(_command(outcome), [])
    assert text.stdout == "one\ntwo\n" and text.exit_code == code
    assert text.stderr == "".join(f"kit: {e}\n" for e in errors)


@pytest.mark.parametrize("signal_name,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_command_stopped_by_a_signal_exits_128_plus_its_number(signal_name, code):
    outcome = Outcome("shard", {"terminated": signal_name}, ["stopped"], stopped_by=signal_name)
    result = CliRunner().invoke(_command(outcome), ["--json"])
    assert result.exit_code == code and json.loads(result.stdout)["status"] == "failed"


def test_text_may_be_a_function_that_prints_and_is_not_called_under_json():
    calls = []
    outcome = Outcome("x", {}, lambda: calls.append(click.echo("table")))
    assert CliRunner().invoke(_command(outcome), []).stdout == "table\n" and len(calls) == 1
    assert json.loads(CliRunner().invoke(_command(outcome), ["--json"]).stdout)["status"] == "ok" and len(calls) == 1


@pytest.mark.parametrize("module", sorted(p.name for p in CLI.glob("*_cmd.py")))
def test_no_command_module_prints_an_envelope_or_exits_by_itself(module):
    tree = ast.parse((CLI / module).read_text())
    calls = {f"{n.func.value.id}.{n.func.attr}" for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)}
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "common"}
    assert not calls & {"sys.exit", "common.print_json"}, f"{module}: exits or prints an envelope itself; return an Outcome"
    assert not names & {"OK", "FAILED", "ERROR"}, f"{module}: chooses a status word itself; Outcome derives it"


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT])
def test_a_disk_error_under_any_command_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path, number):
    import kit.results.verify
    from kit.cli.main import main

    def full(*args, **kwargs):
        raise OSError(number, os.strerror(number), "/data/results/.kit/jobs.jsonl")

    monkeypatch.setattr(kit.results.verify, "verify_paths", full)
    for extra in ([], ["--json"]):
        with pytest.raises(SystemExit) as done:
            main(["verify", str(tmp_path), *extra])
        out, err = capsys.readouterr()
        assert done.value.code == 2
        fix = {errno.EROFS: "write to a folder on a disk that is not mounted read-only",
               errno.EACCES: "give this user access to it (its permissions, and its folders'), or use another folder",
               }.get(number, "free space, or write to a folder on a disk you can write")   # what helps with each
        assert err.strip().splitlines() == [f"kit: error: /data/results/.kit/jobs.jsonl: {os.strerror(number)}; "
                                            f"fix: {fix}"]
        if extra:
            assert json.loads(out)["status"] == "error"


def test_an_error_that_is_not_the_disk_s_keeps_its_traceback(monkeypatch, tmp_path):
    import kit.results.verify
    from kit.cli.main import main

    def broken(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(kit.results.verify, "verify_paths", broken)
    with pytest.raises(OSError):
        main(["verify", str(tmp_path)])
