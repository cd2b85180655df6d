"""What a command did, as one typed value, and the one renderer that prints it.

A command body parses its options, calls the library, and returns an `Outcome` to `render`,
which prints the text or the `--json` envelope, derives the envelope's status word and the exit
code from the outcome, and exits. No command decides its status word or exit code apart."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from kit.cli.common import ERROR, FAILED, OK, print_json
from kit.errors import visible

if TYPE_CHECKING:
    from kit.cli.replay import AnswerMemo


@dataclass
class Outcome:
    """A command's result: `data` is the envelope's `data`; `failed` says the command did its job and
    found something wrong (a FAIL verdict, an invalid file, a failed job: exit 1); `errors` are
    problems that kept part of the job from being done (printed on stderr; status error, exit 1); `text`
    is what a person reads: lines (each shown by kit.errors.visible: no name in it breaks a line or reads
    other than it is), or a function that prints them (rich tables); `stopped_by` names
    the signal (SIGTERM, SIGINT) that stopped the command before its end: failed, exit 128 + N, as
    a shell reports a process the signal killed."""

    command: str
    data: Any = None   # or a function returning it, called only for --json (a table of 20,000 pairs never needs it)
    text: Iterable[str] | Callable[[], None] = ()
    failed: bool = False
    errors: list[str] = field(default_factory=list)
    stopped_by: str | None = None

    @property
    def status(self) -> str:
        """The envelope's status word: error (a part could not be done: `errors`), failed (a finding,
        or stopped by a signal), else ok."""
        return ERROR if self.errors else FAILED if self.failed or self.stopped_by else OK

    @property
    def exit_code(self) -> int:
        """0 when ok, 128 + N when stopped by signal N, else 1 (2, bad input, never reaches an
        outcome: kit.errors)."""
        if self.stopped_by:
            return 128 + signal.Signals[self.stopped_by]
        return 0 if self.status == OK else 1


def render(outcome: Outcome, as_json: bool, memo: "AnswerMemo | None" = None) -> None:
    """Print the outcome (the envelope on stdout with --json, else its text, errors on stderr) and
    exit with its code when that is not 0; with `memo` (kit.cli.replay), the answer is kept for the
    next time the same question is asked of the same files."""
    if as_json:
        data = outcome.data() if callable(outcome.data) else outcome.data
        print_json(outcome.command, outcome.status, data, outcome.errors)
    else:
        if callable(outcome.text):
            outcome.text()
        else:
            for line in outcome.text:   # (a text may be many lines in one string: one write)
                click.echo("\n".join(map(visible, line.split("\n"))))
        for error in outcome.errors:
            click.echo(f"kit: {visible(error)}", err=True)
    if memo is not None:
        memo.keep(outcome.exit_code, bool(outcome.errors or outcome.stopped_by))
    if outcome.exit_code:
        sys.exit(outcome.exit_code)
