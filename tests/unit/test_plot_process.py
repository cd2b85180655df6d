"""kit.results.plot_process: plots drawn in a forked child while the report goes on, their errors raised
in the report's process as they were raised, and matplotlib kept out of the process holding the records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kit.errors import KitError, MissingExtraError
from kit.results.plot_process import draw, plot_process

REPO = Path(__file__).resolve().parents[2]


def drawing_pid(tag: str) -> tuple[str, int]:
    return tag, os.getpid()


def refusing(what: str) -> bytes:
    raise MissingExtraError(what, "matplotlib", "report")


def dying() -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def test_inside_a_plot_process_the_plot_is_drawn_in_another_process() -> None:
    with plot_process():
        first, second = draw(drawing_pid, "a"), draw(drawing_pid, "b")
        # answers are matched to their requests whatever order they are read in
        assert second.result()[0] == "b" and first.result()[0] == "a"
        assert first.result()[1] != os.getpid()


def test_outside_a_plot_process_the_plot_is_drawn_here() -> None:
    assert draw(drawing_pid, "x").result() == ("x", os.getpid())


def test_a_function_made_on_the_fly_is_drawn_here() -> None:
    with plot_process():
        assert draw(lambda: os.getpid()).result() == os.getpid()


def test_an_error_of_the_child_is_raised_here_as_it_was_raised() -> None:
    with plot_process():
        refused = draw(refusing, "kit report's heatmap")
        with pytest.raises(MissingExtraError, match=r"kit report's heatmap needs .*matplotlib"):
            refused.result()
        assert draw(drawing_pid, "after").result()[0] == "after"   # the child still answers


def test_an_error_outside_a_plot_process_is_raised_by_result_too() -> None:
    refused = draw(refusing, "the plot")
    with pytest.raises(MissingExtraError):
        refused.result()


def test_a_child_that_dies_is_one_kit_error_not_a_hang() -> None:
    with plot_process():
        with pytest.raises(KitError, match="plotting process ended before it answered"):
            draw(dying).result()


def big_plot() -> bytes:
    return b"x" * (1 << 20)   # more than a pipe holds: the child waits to send it


def test_a_report_that_fails_before_collecting_its_plots_does_not_wait_for_the_child() -> None:
    import time

    started = time.monotonic()
    with pytest.raises(RuntimeError):
        with plot_process():
            draw(big_plot)
            raise RuntimeError("the report failed on the way")
    assert time.monotonic() - started < 5


def test_nested_plot_processes_share_the_outer_child() -> None:
    with plot_process():
        outer = draw(drawing_pid, "o").result()[1]
        with plot_process():
            assert draw(drawing_pid, "i").result()[1] == outer


def test_a_report_leaves_matplotlib_out_of_its_own_process(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(REPO / "tests" / "unit")!r}, {str(REPO)!r}]
        from pathlib import Path
        from test_report import CELLS, make_checkpoint
        from kit.results.report import write_report
        root = Path({str(tmp_path / "results")!r})
        for run, language in CELLS:
            make_checkpoint(root, run, language)
        written = write_report(root, Path({str(tmp_path / "out")!r}))
        print(sorted(written.files), "matplotlib" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    roles, imported = done.stdout.strip().rsplit(" ", 1)
    assert "'heatmap'" in roles and imported == "False"
    assert (tmp_path / "out" / "heatmap_f1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def interrupt_disposition(_: object = None) -> bool:
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_ctrl_c_is_left_to_the_command_s_own_process_by_its_helpers() -> None:
    """The plotting process and the validation pool's workers ignore SIGINT (the terminal sends it to the
    whole group): the command's process ends them and says `kit: interrupted` once, and no helper prints a
    traceback of its own."""
    from kit.results.parallel import fork_map, usable_cores

    # as a terminal runs kit (a shell's background job, as CI starts the tests, inherits SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with plot_process():
            assert draw(interrupt_disposition).result() is True
        if usable_cores() >= 2:
            assert set(fork_map(interrupt_disposition, range(400))) == {True}
        assert not interrupt_disposition()   # the command's own process still takes Ctrl-C
    finally:
        signal.signal(signal.SIGINT, before)
