"""A cache of validated checkpoints, so that `kit status`, `verify` and `report` re-read only what changed.

Two JSON files per results tree (by its real path: verdicts, and the sections reports read) under the user's cache folder
(KIT_CACHE_DIR/checkpoints, else platformdirs' user cache dir for kit; KIT_NO_CACHE=1 or true turns it off):
it lives with the user, not the results, so a read-only or shared results folder works, a copied
folder starts afresh, and no other user can write verdicts that this one trusts.

An entry is used only when everything the verdict depended on is unchanged, else the file is
validated again (a cache never hides a changed file):
- the file and the log beside it: size, mtime_ns, ctime_ns, inode and device (stat before reading, so a write during the
  read leaves a key that no longer matches); a file changed less than RACY_SECONDS before it was
  read is not stored (timestamps are coarse: a second write in the same tick would look the same);
- kit: its version and the size and mtime of the sources validation runs (a code change revalidates);
- the expectation: the run and language asked for, and a digest of the benchmark ids, answers and
  run identity the file was held to (kit.results.identity.Expected).
A verdict is stored with the checkpoint's sections other than `predictions`, its count of
truncated predictions, its items' outcomes in short (ResultKind.item_outcomes) and, for a report's
reader, its MLLOG compliance findings (checked beside the validation, against its log, whose identity
is in the key): what status, verify and report need, so nothing holds every prediction.

Each file holds an entry per line and is read a line at a time (kit.results.sealed_lines): a
release's sections are never all held as text or as one parse. A cache file that cannot be read or
does not parse is ignored and rebuilt; a save writes a temporary file and renames it in, under a
file lock (filelock), copying the lines other processes stored meanwhile and merging their verdicts.
Failing to write it is never an error.

Each cache file ends in an HMAC-SHA256 of its text under a key only this user can read (KEY_FILE in
the cache folder, 0600, made once): a cache file edited by hand, or one whose key is gone, is
ignored as a whole, and a cached state that is not a pair state is never used. The cache may decide
for `kit status`, `kit verify` and `kit report` (status says how many verdicts it took from it);
check, collect, release, export and publish read every file (docs/checkpoint-format.md, evidence
policy).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import kit
from kit.errors import ConfigError
from kit.results.cache_place import RACY_SECONDS, cache_folder, cache_key, file_identity
from kit.results.checkpoint import MISSING, CheckpointState
from kit.results.keys import PairState
from kit.results.identity import Expectation, identity_text
from kit.results.parallel import validate_many
from kit.results.sealed_lines import read_entries, write_entries
from kit.results.shared_values import shared_json
from kit.results.tree_answers import Question, TreeAnswers


CACHE_FORMAT = 5   # 5: sealed line files (kit.results.sealed_lines)
_STATES = frozenset(PairState)
# regular files this process validated, not from a cache (kit.cli.replay keeps only answers that took none)
_VALIDATED = [0]


def code_identity() -> str:
    """kit's version and the size and mtime of the sources validation runs (kit/results, kit/config,
    kit/safejson.py) and of its default files (the MLLOG rulesets), so that a changed kit, released or
    not, validates again."""
    package = Path(kit.__file__).resolve().parent
    # kit/defaults holds the MLLOG rulesets a cached compliance verdict was checked against
    sources = [*package.joinpath("results").rglob("*.py"), *package.joinpath("config").rglob("*.py"),
               package / "safejson.py", *package.joinpath("defaults").glob("*")]
    parts = [kit.__version__, str(CACHE_FORMAT), *package_file_stats(sources)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def files_validated() -> int:
    """How many regular files this process has validated rather than taken from a cache, so far."""
    return _VALIDATED[0]


def package_file_stats(paths: Iterable[Path]) -> list[str]:
    """"path:size:mtime_ns" of each of these files of the kit package (path relative to it), in path order,
    leaving out any that is gone: what any edit of kit's own files changes (the cache's and the report
    memo's code identity)."""
    package = Path(kit.__file__).resolve().parent
    out = []
    for path in sorted(Path(p) for p in paths):
        try:
            st = path.stat()
        except OSError:
            continue
        out.append(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns}")
    return out


_CHECKER: list[str | None] = []


def checker_version() -> str | None:
    """The installed mlperf-logging's version (None without it): cached compliance findings hold for it only."""
    if not _CHECKER:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _CHECKER.append(version("mlperf-logging"))
        except PackageNotFoundError:
            _CHECKER.append(None)
    return _CHECKER[0]


def _compliance_findings() -> Any:
    """kit.results.check.compliance_findings: what a report's reader keeps of each file's MLLOG compliance."""
    from kit.results.check import compliance_findings   # the checker's imports only where a report asks

    return compliance_findings


def _log_identity(checkpoint: str) -> list[int]:
    """file_identity of the log beside a checkpoint (its presence is part of the verdict), or [-1]."""
    try:
        return file_identity(os.lstat(checkpoint[:-5] + ".mllog" if checkpoint.endswith(".json") else checkpoint))
    except OSError:
        return [-1]


class CheckpointCache:
    """The validated checkpoints of one results tree; `validate` is validate_checkpoint with a memory.
    With `folder` None nothing is read or stored (every call validates). Verdicts and sections are kept
    in two files: with `sections` False (status, verify) only the small verdict file is read, and a
    cached state comes back with no data."""

    def __init__(self, results: Path, folder: Path | None, *, sections: bool = True) -> None:
        self.results = Path(results)
        self._root = os.fspath(self.results).rstrip(os.sep) + os.sep
        self.code = code_identity()
        self.sections = sections
        real = os.path.realpath(self.results)
        self._key = cache_key(folder) if folder else None
        # the path's bytes: a folder name need not be UTF-8 (os.fsencode gives the same bytes when it is)
        self.file = folder / f"{hashlib.sha256(os.fsencode(real)).hexdigest()[:32]}.json" if self._key else None
        self.hits = 0   # verdicts taken from the cache by this process
        self._header = {"format": CACHE_FORMAT, "code": self.code,
                        "results": os.fsencode(real).decode("utf-8", "backslashreplace")}   # text a file can hold
        self._verdicts: dict[str, list[Any]] = {}   # state -> the one [state, [], []] of the entries read
        # read when a verdict is first looked up: a question answered whole (kit.results.tree_answers) needs none
        self._entries: dict[str, dict[str, Any]] | None = None if self.file else {}
        self._answers = TreeAnswers(self.file.with_suffix(".answers.json"), self._key, self._header,
                                    _STATES | {MISSING}) if self.file and self._key and not sections else None
        # thousands of summaries repeat the same few hundred strings (digests, names, versions): one object each
        self._strings: dict[Any, Any] = {}   # kit.results.shared_values.shared_json's table
        # entry by entry as each line is read: a whole second copy of a release's sections is 100s of MB
        self.data: dict[str, dict[str, Any]] = self._load(self._data_file, self._shared_entry) \
            if self.file and sections else {}
        # what this process validated and stored, by entry name: [file identity, verdict key, state, key,
        # state, ...], its entries made only as they are written (a cold report stores 20,000 at once)
        self._stored: dict[str, list[Any]] = {}
        self.changed: dict[str, list[Any]] = {}   # of _stored, those not saved yet
        self._digests: dict[tuple[int, int], tuple[Any, Any, str]] = {}

    @property
    def entries(self) -> dict[str, dict[str, Any]]:
        """The verdicts file's entries by name (read on first use)."""
        if self._entries is None:
            self._entries = self._load(self.file, self._shared_verdicts) if self.file else {}
        return self._entries

    @classmethod
    def open(cls, results: Path, *, sections: bool = True) -> "CheckpointCache":
        """The cache of a results tree, in cache_folder(); `sections` False when no caller reads a state's data."""
        return cls(results, cache_folder(), sections=sections)

    @property
    def _data_file(self) -> Path:
        assert self.file is not None
        return self.file.with_suffix(".sections.json")

    def validate(self, path: Path, *, run: str | None = None, language: str | None = None,
                 expect: Expectation | None = None) -> CheckpointState:
        """validate_checkpoint(path, run=, language=, expect=), without predictions (see without_predictions),
        from the cache when nothing it depended on changed."""
        return self.validate_all([(Path(path), {"run": run, "language": language, "expect": expect})])[0]

    def validate_all(self, jobs: list[tuple[Path, dict[str, Any]]]) -> list[CheckpointState]:
        """validate for each (path, validate_checkpoint keyword arguments) job, in order
        (kit.results.checkpoint.ValidateAll): the whole answer when the same jobs were answered for files
        all unchanged since (status and verify, kit.results.tree_answers), else cached verdicts where they
        hold, the rest validated on every usable core (kit.results.parallel) and stored."""
        if self._answers is None:   # a report's reader: each job looked up as it is found, none held
            return self._validate(self._found_each(jobs, None), None)
        question = Question()
        facts = list(self._found_each(jobs, question))
        digests = question.digests
        if digests is not None:
            recalled = self._answers.recall(*digests, len(jobs))
            if recalled is not None:
                self.hits += sum(found is not None for _, _, found in facts)
                return [CheckpointState(state, list(reasons), list(notices)) for state, reasons, notices in recalled]
        return self._validate(facts, digests)

    def _found_each(self, jobs: list[tuple[Path, dict[str, Any]]], question: Question | None
                    ) -> Iterator[tuple[Path, dict[str, Any], tuple[str, list[int], str, float] | None]]:
        """Each job as (path, keyword arguments, found): found is its entry name, file and log identity,
        verdict key and last change (not the whole stat: thousands are held while the pool runs), or None
        for no regular file (or no cache); each added to `question` as it is found."""
        # a warm status of a sweep runs this for twenty thousand files: names bound once
        name_of, key_of, is_regular = self._name, self._verdict_key, stat.S_ISREG
        cached = self.file is not None
        for path, kwargs in jobs:
            text = os.fspath(path)
            try:
                st = os.stat(text)
            except FileNotFoundError:
                st = None
            except OSError:
                st = None
                if question is not None:
                    question.abandon()   # not a plain "no file": never answered whole
            path = path if isinstance(path, Path) else Path(path)
            if st is None or not is_regular(st.st_mode) or not cached:
                if question is not None:
                    if st is None:
                        question.add(name_of(text), key_of(kwargs.get("run"), kwargs.get("language"),
                                                           kwargs.get("expect")), None)
                    else:
                        question.abandon()
                yield path, kwargs, None
                continue
            found = (name_of(text), file_identity(st) + _log_identity(text),
                     key_of(kwargs.get("run"), kwargs.get("language"), kwargs.get("expect")),
                     max(st.st_mtime, st.st_ctime))
            if question is not None:
                question.add(found[0], found[2], found[1])
            yield path, kwargs, found

    def _validate(self, facts: Iterable[tuple[Path, dict[str, Any], tuple[str, list[int], str, float] | None]],
                  digests: tuple[str, str] | None) -> list[CheckpointState]:
        """The states of these found jobs: cached where they hold, the rest validated and stored; with the
        question's `digests`, the answer kept whole when every verdict was."""
        out: list[CheckpointState | None] = []
        misses = []
        for index, (path, kwargs, found) in enumerate(facts):
            hit = self._lookup(*found[:3]) if found is not None else None
            out.append(hit)
            if hit is None:
                misses.append((index, path, kwargs, found))
            else:
                self.hits += 1
        whole = digests is not None   # every verdict kept: the answer can be kept whole
        if misses:
            checked_at = time.time()
            # each state's strings shared as it comes back: a release's summaries are never all held twice
            states = validate_many([(path, kwargs) for _, path, kwargs, _ in misses], keep_data=self.sections,
                                   compliance=_compliance_findings() if self.sections else None,
                                   then=self._shared if self.sections else None)
            _VALIDATED[0] += sum(found is not None for _, _, _, found in misses)
            for (index, _, _, found), state in zip(misses, states):
                out[index] = state
                if found is None:
                    whole = whole and state.state == MISSING   # (a file that came meanwhile is not kept)
                elif checked_at - found[3] > RACY_SECONDS:
                    self._store(*found[:3], state)
                else:
                    whole = False
        if whole and digests is not None and self._answers is not None:
            self._answers.remember(*digests, [(s.state, s.reasons, s.notices) for s in out])   # type: ignore[union-attr]
        return out   # type: ignore[return-value]   # every None was filled

    def _shared(self, state: CheckpointState) -> CheckpointState:
        """The state with its sections' strings and objects shared, and its outcomes' item digest (one
        per language's items, held by each of its runs' records)."""
        outcomes = state.outcomes
        if outcomes is not None:
            outcomes = (self._strings.setdefault(outcomes[0], outcomes[0]), outcomes[1])
        return replace(state, data=shared_json(state.data, self._strings), outcomes=outcomes)

    def _shared_verdicts(self, name: str, entry: Any) -> Any:
        """A verdicts entry as read, each verdict without reasons or notices one list per state (20,000
        entries read for a release's tree: nothing edits them, a stored verdict is a new list)."""
        verdicts = entry.get("verdicts") if isinstance(entry, dict) else None
        if isinstance(verdicts, dict):
            for key, verdict in verdicts.items():
                if isinstance(verdict, list) and len(verdict) == 3 and verdict[1] == [] and verdict[2] == [] \
                        and isinstance(verdict[0], str):
                    verdicts[key] = self._verdicts.setdefault(verdict[0], verdict)
        return entry

    def _shared_entry(self, name: str, kept: Any) -> Any:
        """A sections entry as read: its strings and nested objects shared, and its file identity the
        verdicts entry's own list when they are equal."""
        kept = shared_json(kept, self._strings, document_depth=1)   # kept["summary"] is the document
        entry = self.entries.get(name)
        if isinstance(kept, dict) and isinstance(entry, dict) and kept.get("file") == entry.get("file"):
            kept["file"] = entry["file"]
        return kept

    def save(self) -> None:
        """Write what this process validated into the cache files (merged with what is there now)."""
        answers = self._answers is not None and self._answers.unsaved
        if self.file is None or not (self.changed or answers):
            return
        try:
            from filelock import FileLock, Timeout

            self.file.parent.mkdir(parents=True, exist_ok=True)
            try:
                # merged with what other processes stored meanwhile, a line at a time
                with FileLock(str(self.file) + ".lock", timeout=10):
                    if self.changed:
                        if self.sections:
                            self._write(self._data_file, _Entries(self.changed, self._sections_entry))
                        self._write(self.file, _Entries(self.changed, self._verdicts_entry), _merged_verdicts)
                        self.changed = {}
                    if answers:   # after the verdicts: an answer never stands for verdicts not saved
                        self._answers.save()   # type: ignore[union-attr]
            except Timeout:
                return
        except OSError:
            return

    def forget(self, paths: list[Path]) -> None:
        """Save, then drop these files' entries from memory: a report reads each file once, and its
        records hold what it needs (a release's entries are tens of MB). Asked again, a file is validated
        again."""
        self.save()
        if self.changed:   # not saved (another process held the lock): kept for the next save
            return
        for path in paths:
            name = self._name(os.fspath(path))
            self.entries.pop(name, None)
            self.data.pop(name, None)
            self._stored.pop(name, None)

    def _name(self, text: str) -> str:
        # the entry's name only has to be stable: the key holds the inode and device
        root = self._root
        return text[len(root):] if text.startswith(root) else os.path.abspath(text)

    def _verdict_key(self, run: str | None, language: str | None, expect: Expectation | None) -> str:
        return f"{run!r}\0{language!r}\0{self._expect_digest(expect)}"

    def _expect_digest(self, expect: Expectation | None) -> str | None:
        if expect is None:
            return None
        identity = expect.identity_key
        if identity is None:
            identity = identity_text(expect.identity) if expect.identity is not None else None
        # a planned pair names its language data without reading it (kit.results.identity.LazyExpected)
        fingerprint = expect.fingerprint
        if fingerprint is not None:
            return hashlib.sha256(f"file\0{fingerprint}\0{identity}".encode()).hexdigest()
        # else the same benchmark language gives the same ids and answers objects: digest them once
        try:
            ids, answers = expect.item_ids, expect.answers
        except ConfigError as exc:   # its data cannot be read (the verdict says so): keyed by why
            return hashlib.sha256(f"unread\0{exc.one_line()}\0{identity}".encode()).hexdigest()
        memo = (id(ids), id(answers))
        known = self._digests.get(memo)
        if known is None or known[0] is not ids or known[1] is not answers:
            text = json.dumps([ids, sorted(answers.items()) if answers is not None else None], default=repr)
            known = (ids, answers, hashlib.sha256(text.encode()).hexdigest())
            self._digests[memo] = known
        return hashlib.sha256(f"data\0{known[2]}\0{identity}".encode()).hexdigest()

    def _lookup(self, name: str, ident: list[int], verdict_key: str) -> CheckpointState | None:
        stored = self._stored.get(name)
        if stored is not None and stored[0] == ident:
            for at in range(1, len(stored), 2):
                if stored[at] == verdict_key:   # as the entries saved from it would give it back
                    return self._as_cached(stored[at + 1])
        entry = self.entries.get(name)
        try:
            if entry is None or entry["file"] != ident:
                return None
            verdict = entry["verdicts"].get(verdict_key)
            if verdict is None:
                return None
            state, reasons, notices = verdict
            if not (state in _STATES and isinstance(reasons, list) and isinstance(notices, list)):
                return None
            data, truncated, outcomes, compliance = None, None, None, None
            if self.sections:
                kept = self.data.get(name)
                if not isinstance(kept, dict) or kept.get("file") != ident:
                    return None
                data, truncated, outcomes = kept["summary"], kept["truncated"], kept["outcomes"]
                if not (data is None or isinstance(data, dict)) or not isinstance(truncated, int):
                    return None
                # findings of another mlperf-logging than this one are checked again, at the page
                compliance = kept.get("compliance") if kept.get("checker") == checker_version() else None
                if compliance is not None:
                    if not (isinstance(compliance, list) and all(
                            isinstance(f, list) and len(f) == 4 and all(isinstance(x, str) for x in f) for f in compliance)):
                        return None
                    compliance = tuple(tuple(f) for f in compliance)
                if outcomes is not None:
                    digest, cells = outcomes
                    if not (isinstance(digest, str) and isinstance(cells, str)):
                        return None
                    outcomes = (digest, cells)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return CheckpointState(state, list(reasons), list(notices), data, truncated=truncated, outcomes=outcomes,
                               compliance=compliance)

    def _store(self, name: str, ident: list[int], verdict_key: str, state: CheckpointState) -> None:
        stored = self._stored.get(name)
        if stored is None or stored[0] != ident:
            stored = [ident]
        elif verdict_key in stored[1::2]:
            at = 1 + 2 * stored[1::2].index(verdict_key)
            del stored[at:at + 2]
        stored += [verdict_key, state]
        self._stored[name] = self.changed[name] = stored

    def _as_cached(self, state: CheckpointState) -> CheckpointState:
        """A stored state as _lookup gives a cached one: new lists; with no sections, no data."""
        if not self.sections:
            return CheckpointState(state.state, list(state.reasons), list(state.notices))
        return CheckpointState(state.state, list(state.reasons), list(state.notices), state.data,
                               truncated=state.truncated or 0,
                               outcomes=tuple(state.outcomes) if state.outcomes is not None else None,   # type: ignore[arg-type]
                               compliance=tuple(tuple(f) for f in state.compliance) if state.compliance is not None else None)   # type: ignore[misc]

    def _verdicts_entry(self, name: str, stored: list[Any]) -> dict[str, Any]:
        """The verdicts entry of a file as saved: the verdicts read for the same file identity, and this process's."""
        entry = self.entries.get(name)
        verdicts = dict(entry["verdicts"]) if isinstance(entry, dict) and entry.get("file") == stored[0] \
            and isinstance(entry.get("verdicts"), dict) else {}
        for at in range(1, len(stored), 2):
            state = stored[at + 1]
            verdicts[stored[at]] = [state.state, list(state.reasons), list(state.notices)]
        return {"file": stored[0], "verdicts": verdicts}

    def _sections_entry(self, name: str, stored: list[Any]) -> dict[str, Any]:
        """The sections entry of a file as saved, from the last state this process stored for it."""
        state = stored[-1]
        return {"file": stored[0], "summary": state.data, "truncated": state.truncated or 0,
                "outcomes": list(state.outcomes) if state.outcomes is not None else None,
                "compliance": [list(f) for f in state.compliance] if state.compliance is not None else None,
                "checker": checker_version()}

    def _load(self, file: Path, keep: Callable[[str, Any], Any] | None = None) -> dict[str, dict[str, Any]]:
        """A cache file's entries ({} when it is missing, of another kit or tree, edited or cut short)."""
        return read_entries(file, self._key or b"", self._header, keep)

    def _write(self, file: Path, changed: dict[str, dict[str, Any]],
               merge: Callable[[Any, Any], Any] | None = None) -> None:
        """Rewrite a cache file with these entries changed (kit.results.sealed_lines.write_entries)."""
        write_entries(file, self._key or b"", self._header, changed, merge)


def _merged_verdicts(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    """A file's entry as saved: the verdicts stored meanwhile for the same file identity kept beside these."""
    if isinstance(old, dict) and old.get("file") == new["file"] and isinstance(old.get("verdicts"), dict):
        return {**new, "verdicts": {**old["verdicts"], **new["verdicts"]}}
    return new


class _Entries(Mapping[str, Any]):
    """Stored states as cache entries by name, each entry made when it is asked for (as it is written)."""

    def __init__(self, stored: dict[str, list[Any]], entry: Callable[[str, list[Any]], dict[str, Any]]) -> None:
        self._stored, self._entry = stored, entry

    def __getitem__(self, name: str) -> dict[str, Any]:
        return self._entry(name, self._stored[name])

    def __contains__(self, name: object) -> bool:
        return name in self._stored

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)
