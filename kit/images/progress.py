"""Streaming progress of long image operations (builds, conversions), printed with rich on
stderr: build steps stand out, tool output is dimmed, and the last lines are kept so a
failure can quote them."""

from __future__ import annotations

import re
import time
from collections import deque
from typing import Any

from rich.markup import escape

_STEP = re.compile(r"^Step \d+/\d+ : ")
_LAYER = re.compile(r"^ ---> ([0-9a-f]{12,64})$")


class Progress:
    """Prints one operation's output lines and remembers the tail and the layer ids it saw."""

    def __init__(self, title: str, *, quiet: bool = False, console: Any = None) -> None:
        from rich.console import Console

        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.quiet = quiet
        self.tail: deque[str] = deque(maxlen=25)
        self.layers: list[str] = []
        self.t0 = time.monotonic()
        self.console.print(f"[bold]{title}[/bold]")

    def elapsed(self) -> float:
        """Seconds since the operation started."""
        return time.monotonic() - self.t0

    def line(self, text: str) -> None:
        """One line of tool output."""
        text = text.rstrip()
        if not text:
            return
        self.tail.append(text)
        m = _LAYER.match(text)
        if m:
            self.layers.append(m.group(1))
        if _STEP.match(text):
            self.console.print(f"[cyan][{self.elapsed():6.1f}s][/cyan] [bold]{escape(text[:160])}[/bold]")
        elif not self.quiet:
            self.console.print(text[:240], style="dim", markup=False)

    def build_event(self, event: dict[str, Any]) -> str | None:
        """Handle one decoded event of the build API; returns the image id when it reports one."""
        for text in str(event.get("stream", "")).splitlines():
            self.line(text)
        if "status" in event:
            self.line(f"{event['status']} {event.get('progress', '')}".strip())
        aux = event.get("aux") or {}
        return aux.get("ID")

    def done(self, message: str) -> None:
        """The closing line with the elapsed time."""
        self.console.print(f"[green]{message}[/green] [dim]({self.elapsed():.1f}s)[/dim]")

    def tail_text(self, n: int = 6) -> str:
        """The last n lines, joined for a one-line error."""
        return " | ".join(list(self.tail)[-n:])
