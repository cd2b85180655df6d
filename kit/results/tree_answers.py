"""The last answer to each question asked of a whole results tree, so that a command asking again of a
tree where no file changed reads one short line instead of an entry per checkpoint (kit.results.cache).

A question is the list of (checkpoint, verdict key) a command validates, in order: the files of its
plan, each with what it is held to (kit.results.cache's verdict key: the run, language and a digest of
the expectation). The world is what the cache would compare entry by entry: each file's identity and its
log's, or that the file is missing. An answer is the verdicts of that question in that world, and is
given back only for the same question in the same world, under the same kit (the cache file's header);
anything else is a miss, and the command asks the per-file cache as before. `kit status` and `kit verify`
ask different questions of the same tree, so each keeps its own answer.

One sealed file (kit.results.sealed_lines) per tree beside the cache's: an entry per question, the newest
MAX_QUESTIONS kept. An answer holds each distinct verdict once, and each job's index into them.
"""

from __future__ import annotations

import hashlib
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.results.sealed_lines import read_entries, write_entries

MAX_QUESTIONS = 8   # a user's usual questions of one tree: status, verify, a few --model or --language filters
Verdict = tuple[str, list[str], list[str]]   # state, reasons, notices


class Question:
    """The digests of one question and of the world it is asked in, built a job at a time."""

    __slots__ = ("_question", "_world")

    def __init__(self) -> None:
        self._question = hashlib.sha256()
        self._world: array[int] | None = array("q")   # each identity's length, then its numbers; -1: no file

    def add(self, name: str, verdict_key: str, identity: Sequence[int] | None) -> None:
        """One job: its entry name, verdict key (no newline: kit.results.cache builds it from reprs), and its
        file's identity with its log's (None: no file)."""
        self._question.update(f"{len(name)}:{name}\0{verdict_key}\n".encode("utf-8", "surrogatepass"))
        world = self._world
        if world is None:
            return
        if identity is None:
            world.append(-1)   # no length is negative
            return
        try:
            world.append(len(identity))
            world.extend(identity)
        except OverflowError:   # a number past 64 bits: this world is not digested (never answered whole)
            self.abandon()

    def abandon(self) -> None:
        """This question can never be answered whole (a job's file is neither a regular file nor missing)."""
        self._world = None

    @property
    def digests(self) -> tuple[str, str] | None:
        """(question, world) as hex digests; None when the world could not be digested."""
        if self._world is None:
            return None
        return self._question.hexdigest(), hashlib.sha256(self._world.tobytes()).hexdigest()


class TreeAnswers:
    """The answers file of one tree: `recall` an answer, `remember` one, `save` what was remembered."""

    def __init__(self, file: Path, key: bytes, header: dict[str, Any], states: frozenset[str]) -> None:
        self.file, self._key, self._header, self._states = file, key, header, states
        self._read: dict[str, Any] | None = None
        self._new: dict[str, dict[str, Any]] = {}

    def recall(self, question: str, world: str, jobs: int) -> list[Verdict] | None:
        """The verdicts of the `jobs` jobs of this question in this world, in order; None when there is no
        such answer, or it is not well formed."""
        entry = self._entries().get(question)
        try:
            if entry["world"] != world:
                return None
            verdicts, picks = entry["verdicts"], entry["picks"]
            if not (isinstance(picks, list) and len(picks) == jobs and isinstance(verdicts, list)):
                return None
            table = [self._verdict(v) for v in verdicts]
            return [table[i] for i in picks]
        except (KeyError, TypeError, IndexError, ValueError):
            return None

    def remember(self, question: str, world: str, verdicts: Sequence[Verdict]) -> None:
        """Keep this answer, to be written by `save`."""
        table: dict[tuple[str, tuple[str, ...], tuple[str, ...]], int] = {}
        picks = [table.setdefault((state, tuple(reasons), tuple(notices)), len(table))
                 for state, reasons, notices in verdicts]
        self._new[question] = {"world": world, "at": time.time(),
                               "verdicts": [[s, list(r), list(n)] for s, r, n in table], "picks": picks}

    @property
    def unsaved(self) -> bool:
        """True when an answer was remembered and not saved yet."""
        return bool(self._new)

    def save(self) -> None:
        """Write the remembered answers beside the newest others in the file now (MAX_QUESTIONS in all;
        the caller holds the cache's lock); OSError when the file cannot be written."""
        if not self._new:
            return
        self._read = None   # what other processes saved meanwhile
        kept = {**self._entries(), **self._new}
        newest = sorted(kept, key=lambda q: _when(kept[q]), reverse=True)[:MAX_QUESTIONS]
        write_entries(self.file, self._key, self._header, {q: kept[q] for q in newest}, only=True)
        self._read = {q: kept[q] for q in newest}
        self._new = {}

    def _entries(self) -> dict[str, Any]:
        if self._read is None:
            self._read = read_entries(self.file, self._key, self._header)
        return self._read

    def _verdict(self, value: Any) -> Verdict:
        state, reasons, notices = value
        if not (state in self._states and isinstance(reasons, list) and isinstance(notices, list)
                and all(isinstance(x, str) for x in reasons + notices)):
            raise ValueError("not a verdict")
        return state, reasons, notices


def _when(entry: Any) -> float:
    at = entry.get("at") if isinstance(entry, dict) else None
    return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0
