"""Step times a slow test module measures, printed once in pytest's terminal summary (figures for the
reader of a CI log; nothing is asserted on them: speed targets live in bench/)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class StepTimes:
    """Named step times (seconds), printed as one line titled `title` at the end of the session."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.times: dict[str, float] = {}

    def timed(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), its time kept under `key`."""
        t0 = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            self.times[key] = round(time.monotonic() - t0, 1)

    def since(self, key: str, t0: float) -> None:
        """Keep the time from monotonic clock reading `t0` to now under `key`."""
        self.times[key] = round(time.monotonic() - t0, 1)

    def report_at_end(self, config: Any) -> None:
        """Print the times in the terminal summary of this pytest session (registered once)."""
        name = f"kit-timings-{self.title}"
        if not config.pluginmanager.has_plugin(name):
            config.pluginmanager.register(self, name)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """pytest hook: the line of times."""
        if self.times:
            terminalreporter.write_line(f"{self.title} timings (s): "
                                        + ", ".join(f"{k} {v}" for k, v in self.times.items()))
