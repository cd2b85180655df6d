"""A signal to kit while the `local` scheduler runs a job reaches the job: it stops as on a cluster's
cancel (its own trap runs), no process of it outlives kit, and kit exits 128 + the signal; also when
kit itself was started with SIGINT and SIGHUP ignored, as under `nohup` or `cmd &` in a script."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kit.config.sites import Site
    from kit.launch.request import JobRequest
    from kit.launch.schedulers.local import LocalScheduler

    script, logs = Path(sys.argv[1]), sys.argv[2]
    sub = LocalScheduler(Site(name="local", scheduler="local")).submit(JobRequest("job", 0, 60), script, logs, {})
    if sub.stopped_by:   # the job ended on the signal, its exit status recorded: kit run exits 128 + N
        print("stopped by", sub.stopped_by, "recorded", sub.exit_codes, flush=True)
        raise SystemExit(128 + sub.stopped_by)
    print("not stopped", flush=True)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _ignore_stop_signals() -> None:
    """What `nohup` and a non-interactive shell's `cmd &` hand their command: SIGINT (and SIGHUP) ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _default_stop_signals() -> None:
    """A terminal's foreground command: the stop signals at their defaults, whatever pytest was started with."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.slow   # a job started and signalled, six times: 12 s
@pytest.mark.parametrize("started", [_default_stop_signals, _ignore_stop_signals], ids=["terminal", "nohup"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_kit_stops_the_job_and_leaves_no_process(tmp_path: Path, sig: signal.Signals, started) -> None:
    marker, pids = tmp_path / "trapped", tmp_path / "pids"
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        trap 'echo trapped > {marker}; kill $child 2>/dev/null; exit 143' TERM INT HUP
        sleep 60 &
        child=$!
        echo "$$ $child" > {pids}
        echo started
        wait $child
    """), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(script), str(tmp_path / "logs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=started)
    assert proc.stderr is not None
    assert proc.stderr.readline().strip() == "started"
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig and "not stopped" not in out and f"stopped by {int(sig)} recorded" in out
    assert marker.exists()
    shell, sleeper = map(int, pids.read_text(encoding="utf-8").split())
    deadline = time.monotonic() + 5
    while (_alive(shell) or _alive(sleeper)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(shell) and not _alive(sleeper)


def test_a_job_that_ends_by_itself_leaves_kit_s_signals_as_they_were(tmp_path: Path) -> None:
    from kit.config.sites import Site
    from kit.launch.request import JobRequest
    from kit.launch.schedulers.local import LocalScheduler

    script = tmp_path / "job.sh"
    script.write_text("echo done\n", encoding="utf-8")
    before = signal.getsignal(signal.SIGTERM)
    sub = LocalScheduler(Site(name="local", scheduler="local")).submit(JobRequest("job", 0, 60), script,
                                                                      str(tmp_path / "logs"), dict(os.environ))
    assert list(sub.exit_codes.values()) == [0] and signal.getsignal(signal.SIGTERM) is before


@pytest.mark.slow   # two jobs run to their one-second walltime
@pytest.mark.parametrize("traps", [True, False], ids=["stops on SIGTERM", "ignores SIGTERM"])
def test_a_local_job_is_stopped_at_its_walltime_as_a_scheduler_stops_it(tmp_path: Path, monkeypatch, capsys,
                                                                          traps: bool) -> None:
    """The walltime a local site gives holds: at it the job gets SIGTERM (its trap runs, as the worker's
    does, and its exit status is recorded); a job that ignores it gets SIGKILL KILL_WAIT later."""
    from kit.config.sites import Site
    from kit.launch.request import JobRequest
    from kit.launch.schedulers import local

    monkeypatch.setattr(local, "KILL_WAIT", 0.5)
    marker = tmp_path / "trapped"
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        trap '{"echo trapped > " + str(marker) + "; exit 143" if traps else ""}' TERM
        for i in $(seq 100); do sleep 0.1; done
        echo finished
    """), encoding="utf-8")
    started = time.monotonic()
    sub = local.LocalScheduler(Site(name="local", scheduler="local")).submit(JobRequest("job", 0, 1), script,
                                                                             str(tmp_path / "logs"), {})
    took = time.monotonic() - started
    (code,) = sub.exit_codes.values()
    said = capsys.readouterr().err
    assert "finished" not in said and "the job reached its walltime (1 s): sent SIGTERM" in said
    if traps:
        assert code == 143 and marker.exists() and "SIGKILL" not in said and took < 8   # (unstopped: 10 s)
    else:
        assert code == -signal.SIGKILL and "sent SIGKILL" in said and 1.5 <= took < 9
