"""A report's plots drawn in a process of their own, forked before the report reads its records.

matplotlib's import (about 25 MB) and a plot's canvas (tens of MB for a release's heatmap of 235 runs x
85 languages) then never land in the process that holds thousands of records, and a plot is drawn while
that process goes on with its tables. Without fork (not Linux) or outside `plot_process()`, `draw` calls
the function here and now. A plot function is sent by name: one that is not a module's own (made on the fly) is
drawn here. Its exceptions come back as they were raised (KitError's pickle).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kit.errors import KitError
from kit.results.parallel import fork_available, ignore_interrupts

# the open plotting process (of this process id only: a forked worker must not use its pipe)
_OPEN: "_Plotter | None" = None
_CHECK_PARENT_SECONDS = 1.0


class Drawing:
    """A plot asked for: `result()` gives its bytes (or raises what drawing it raised)."""

    def __init__(self, plotter: "_Plotter | None", index: int, value: Any = None, error: BaseException | None = None):
        self._plotter, self._index, self._value, self._error = plotter, index, value, error

    def result(self) -> Any:
        """What the plot function returned; what it raised is raised here."""
        if self._plotter is not None:
            self._value, self._error = self._plotter.answer(self._index)
            self._plotter = None
        if self._error is not None:
            raise self._error
        return self._value


def draw(function: Callable[..., Any], *args: Any) -> Drawing:
    """function(*args), drawn in the plotting process when one is open (returns at once), else here."""
    plotter = _OPEN
    if plotter is not None and plotter.owner == os.getpid():
        asked = plotter.ask(function, args)
        if asked is not None:
            return asked
    try:
        return Drawing(None, -1, value=function(*args))
    except Exception as exc:   # raised by result(), as when drawn apart
        return Drawing(None, -1, error=exc)


@contextmanager
def plot_process() -> Iterator[None]:
    """Within: `draw` sends plots to one child process, forked here (while this process is still small)
    and ended on leaving. Nested use keeps the outer one."""
    global _OPEN
    if (_OPEN is not None and _OPEN.owner == os.getpid()) or not fork_available():
        yield
        return
    plotter = _Plotter()
    _OPEN = plotter
    try:
        yield
    finally:
        _OPEN = None
        plotter.close()


class _Plotter:
    """The child process and its pipe: requests answered in the order they were sent."""

    def __init__(self) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self.owner = os.getpid()
        self._conn, child_end = context.Pipe()
        self._process = context.Process(target=_serve, args=(child_end, self.owner), daemon=True,
                                        name="kit-plots")
        self._process.start()
        child_end.close()
        self._sent = 0
        self._answers: dict[int, tuple[Any, BaseException | None]] = {}
        self._received = 0

    def ask(self, function: Callable[..., Any], args: tuple[Any, ...]) -> Drawing | None:
        """The request sent; None when it does not pickle (a function made on the fly): drawn here then."""
        try:
            request = pickle.dumps((function, args), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, AttributeError, TypeError):
            return None
        self._conn.send_bytes(request)
        self._sent += 1
        return Drawing(self, self._sent - 1)

    def answer(self, index: int) -> tuple[Any, BaseException | None]:
        while index not in self._answers:
            try:
                ok, payload = self._conn.recv()
            except (EOFError, OSError) as exc:
                self._process.join(timeout=5)
                raise KitError(f"kit's plotting process ended before it answered (exit code {self._process.exitcode})",
                               fix="run the report again; if it ends the same way, look for the system killing "
                                   "processes for memory (dmesg)") from exc
            self._answers[self._received] = (payload, None) if ok else (None, payload)
            self._received += 1
        return self._answers.pop(index)

    def close(self) -> None:
        """End the child: asked to stop when every plot was collected, else (the report failed on the way,
        a plot's bytes may be stuck in the pipe) ended at once."""
        if self._received == self._sent:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._process.join(timeout=10)
        self._conn.close()
        if self._process.is_alive():
            self._process.kill()
            self._process.join()


def _serve(conn: Any, parent: int) -> None:
    """The child: draw each request, send back (True, result) or (False, the exception), until None."""
    import importlib
    import warnings

    ignore_interrupts()
    # a name in a script matplotlib's font lacks is drawn as boxes: said once in the report, not per glyph
    warnings.filterwarnings("ignore", category=UserWarning, module=r"matplotlib\.")

    try:   # at once, while the report reads its records: the first plot then waits for nothing but itself
        for module in ("matplotlib.figure", "matplotlib.backends.backend_agg"):
            importlib.import_module(module)
    except ImportError:   # the plot function says so, as it would here
        pass
    while True:
        while not conn.poll(_CHECK_PARENT_SECONDS):
            if os.getppid() != parent:   # the report's process is gone: nobody will ask again
                return
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        function, args = request
        try:
            answer = (True, function(*args))
        except BaseException as exc:   # sent back whole, raised in the report's process
            answer = (False, exc)
        try:
            conn.send(answer)
        except Exception as exc:   # a result or an exception that does not pickle: its text instead
            failed = None if answer[0] else answer[1]
            text = f"{type(failed).__name__}: {failed}" if failed is not None else f"its result does not pickle ({exc})"
            conn.send((False, KitError(f"drawing a plot failed: {text}")))
