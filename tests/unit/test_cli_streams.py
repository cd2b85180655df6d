"""What kit does when its own process is in trouble rather than its input: a closed or full standard
output, a reader that went away (`| head`), a stream that cannot hold the text, a deleted working
folder, SIGTERM or SIGHUP, kit's own flags spelled where they are not kit's. Each is one line on stderr
and an exit code a script can tell from a finding (1), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest_checkpoints import make_checkpoint, predictions_of

from kit.results import keys

KIT = [sys.executable, "-m", "kit"]
PAIRS = [(keys.YES, keys.YES), (keys.NO, keys.NO), (keys.YES, keys.NO)] * 4


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A results tree of three valid checkpoints, one in a folder with a non-ASCII name."""
    results = tmp_path / "résultats"
    for run in ("org/a", "org/b", "org/c"):
        make_checkpoint(results, run, "fr", predictions_of(PAIRS))
    return results


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """A shell command line, kit spelled as `kit` (this interpreter's), and the shell's $PIPESTATUS."""
    script = f'kit() {{ "{sys.executable}" -m kit "$@"; }}\n{command}\necho "status: ${{PIPESTATUS[*]}}" >&2\n'
    env = {**os.environ, "KIT_CACHE_DIR": str(cwd / "cache")}
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def statuses(r: subprocess.CompletedProcess) -> list[int]:
    return [int(x) for x in r.stderr.strip().splitlines()[-1].removeprefix("status: ").split()]


def no_traceback(r: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr


@pytest.mark.parametrize("json_flag", ["", "--json"])
def test_a_closed_standard_output_is_one_line_and_exit_2(tree, json_flag):
    r = shell(f"kit verify '{tree.name}' {json_flag} >&-", tree.parent)
    no_traceback(r)
    assert statuses(r) == [2] and "kit: error: standard output is closed" in r.stderr


@pytest.mark.parametrize("json_flag", ["", "--json"])
def test_a_full_standard_output_is_one_line_and_exit_2(tree, json_flag):
    r = shell(f"kit status '{tree.name}' {json_flag} > /dev/full", tree.parent)
    no_traceback(r)
    assert statuses(r) == [2] and r.stderr.count("kit: error: No space left on device") == 1, r.stderr


@pytest.mark.parametrize("command", ["verify '{tree}'", "status '{tree}'", "status '{tree}' --json", "--help",
                                     "--version", "verify --help"])
def test_a_reader_that_went_away_is_the_exit_of_sigpipe_never_a_finding(tree, command):
    """`kit ... | head` with the reader gone: 141 (128 + SIGPIPE), as a shell's own tools end, not 1 (a
    finding) and no traceback; asked twice, so the second answer comes from the kept one."""
    for _ in range(2):
        r = shell(f"kit {command.format(tree=tree.name)} | (exec 0<&-; exit 0)", tree.parent)
        no_traceback(r)
        assert statuses(r) == [128 + signal.SIGPIPE, 0], r.stderr


def test_json_for_an_ascii_stream_is_escaped_not_a_traceback(tree):
    r = shell(f"PYTHONIOENCODING=ascii kit status '{tree.name}' --json", tree.parent)
    no_traceback(r)
    assert statuses(r) == [0]
    data = json.loads(r.stdout)["data"]
    assert data["results"] == tree.name and r.stdout.isascii()
    r = shell("PYTHONIOENCODING=ascii kit verify /nowhere/é --json", tree.parent)   # the error envelope too
    assert statuses(r) == [2] and json.loads(r.stdout)["status"] == "error"


def test_kit_s_own_flags_are_read_only_where_they_are_kit_s(tree, tmp_path):
    """-v (tracebacks) is kit's flag before the command; --json ends at `--`: a folder named -v or --json
    given after `--`, or -v as an option's value, is that value, one line and exit 2, never a traceback."""
    odd = tmp_path / "odd"
    (odd / "-v").mkdir(parents=True)
    (odd / "--json").mkdir()
    r = shell("kit verify -- -v", odd)
    no_traceback(r)
    assert statuses(r) == [2] and "no checkpoint files under -v" in r.stderr
    r = shell("kit verify -- --json", odd)
    assert statuses(r) == [2] and r.stdout == ""
    r = shell(f"kit status '{tree}' --model -v", odd)
    no_traceback(r)
    assert statuses(r) == [2]


@pytest.mark.parametrize("words", [[], ["images"], ["keys"]])
def test_a_group_without_its_command_shows_its_help(tree, words):
    r = subprocess.run([*KIT, *words], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"Usage: kit {' '.join(words) + ' ' if words else ''}[OPTIONS] COMMAND")
    assert "\nCommands:\n" in r.stderr and "kit: error" not in r.stderr


def test_a_deleted_working_folder_does_not_stop_a_command_given_whole_paths(tree, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    r = shell(f"cd '{gone}' && rmdir '{gone}' && kit verify '{tree}'", tmp_path)
    no_traceback(r)
    assert statuses(r) == [0] and "3 verified, 0 failed" in r.stdout


@pytest.mark.slow   # a report of a few hundred checkpoints, stopped twice
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_to_a_report_cleans_up_says_so_and_exits_128_plus_n(tmp_path, sig):
    """SIGTERM (a scheduler's cancel, a service stop) and SIGHUP (a closed terminal) unwind as Ctrl-C does:
    the report's staging folder is removed, one line says which signal, exit 128 + N."""
    results = tmp_path / "results"
    for n in range(60):
        for language in ("de", "en", "fr", "it", "nl"):
            make_checkpoint(results, f"org/m{n:02d}", language, predictions_of(PAIRS * 5))
    env = {**os.environ, "KIT_NO_CACHE": "1"}
    # started as from a terminal: SIGHUP at its default (under nohup, as CI runs, kit keeps it ignored)
    proc = subprocess.Popen([*KIT, "report", str(results), "-o", str(tmp_path / "out")], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    end = time.monotonic() + 120   # until it writes: its staging folder is there
    while not [p for p in tmp_path.iterdir() if p.name.endswith(".kit-staging")]:
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.01)
    # stopped, signalled, resumed: the signal lands while the report is being written, however fast the machine
    proc.send_signal(signal.SIGSTOP)
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == f"kit: stopped by {signal.Signals(sig).name}" and "Traceback" not in err
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if "staging" in p.name] and not list(results.glob(".*staging*"))
    shutil.rmtree(results)


def test_a_process_forked_from_kit_takes_the_stop_signals_default_action():
    """A pool's worker must not inherit kit's Python-level SIGTERM handler: the pool terminates an idle
    worker blocked in C waiting for its next task, and a Python handler tripped just before that wait
    never runs, so the pool (and kit) waited for that worker forever."""
    from kit.cli.main import _stop_signals_as_interrupts

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s in before:
        signal.signal(s, signal.SIG_DFL)
    stops = _stop_signals_as_interrupts()
    try:
        assert callable(signal.getsignal(signal.SIGTERM)) and callable(signal.getsignal(signal.SIGHUP))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child reports its handlers and ends at once
            try:
                os.write(write, b"".join(b"D" if signal.getsignal(s) is signal.SIG_DFL else b"P" for s in before))
            finally:
                os._exit(0)
        os.close(write)
        seen = os.read(read, 16)
        os.close(read)
        os.waitpid(pid, 0)
        assert seen == b"DD"
        assert callable(signal.getsignal(signal.SIGTERM))   # kit's own process keeps its handlers
    finally:
        stops.restore()
        for s, handler in before.items():
            signal.signal(s, handler)


@pytest.mark.parametrize(("stop", "code", "said"), [
    (lambda: __import__("kit.cli.main", fromlist=["Stopped"]).Stopped(signal.SIGTERM), 143, "stopped by SIGTERM"),
    (KeyboardInterrupt, 130, "aborted"),   # (click turns Ctrl-C into its Abort)
])
def test_a_command_stopped_under_json_still_prints_one_envelope(tree, tmp_path, monkeypatch, stop, code, said):
    """A script reading --json reads one document however the command ends: stopped by a signal (as the
    signal handler raises it, mid-command), the failed envelope says so; its line still goes to stderr."""
    from inprocess import kit_in_process

    from kit.results.tree import ResultsTree

    def stopped(*_args, **_kwargs):
        raise stop()

    monkeypatch.setattr(ResultsTree, "scan", stopped)
    r = kit_in_process("status", str(tree), "--json", cwd=tmp_path, env={"KIT_NO_CACHE": "1"})
    assert r.returncode == code and r.stderr.strip() == f"kit: {said}"
    envelope = json.loads(r.stdout)
    assert envelope["status"] == "failed" and envelope["errors"] == [said] and envelope["command"] == "status"
    assert envelope["data"]["stopped_by"] == ("SIGTERM" if code == 143 else "SIGINT")


@pytest.mark.parametrize("terminal", [True, False], ids=["a terminal", "a log"])
def test_progress_bars_are_off_when_standard_error_is_not_a_terminal(tmp_path, terminal):
    """A command's stderr sent to a log (kit shard run by hand into a file, a CI job) gets no progress bars,
    whose carriage returns would fill it; a terminal keeps them; a setting of the user's own wins."""
    import pty

    probe = ("import os, sys\nfrom kit.cli.main import main\ntry:\n    main(['status', '--help'])\n"
             "except SystemExit:\n    pass\nprint(os.environ.get('HF_HUB_DISABLE_PROGRESS_BARS'))\n")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    leader, follower = pty.openpty() if terminal else (None, None)
    try:
        r = subprocess.run([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True, env=env, timeout=60,
                           stderr=follower if terminal else subprocess.PIPE)
    finally:
        for fd in (leader, follower):
            if fd is not None:
                os.close(fd)
    assert r.stdout.strip().splitlines()[-1] == ("None" if terminal else "1")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                       env={**env, "HF_HUB_DISABLE_PROGRESS_BARS": "0"})
    assert r.stdout.strip().splitlines()[-1] == "0"
