"""A command's printed answer, kept beside the identity of everything it read, and printed again while
none of that changed: a warm `kit status` or `kit verify` of a sweep (tens of thousands of pairs) then
costs a stat of each file it read, not the roster, the plan, the imports and the verdict lookups.

What the command read (its "world"):
- every file this process opened and every folder it listed while the command ran (Python's audit
  events `open`, `os.listdir` and `os.scandir`), outside the folders Python imports libraries from,
  kit's own package, kit's cache folder (whose verdicts follow from the files they are of), /proc and
  /sys, each as the system reads it (`link/..` is not normalised away), device nodes left out;
- the files the command names itself: each checkpoint and its log, which the verdict cache stats
  rather than opens, and folders such as the benchmark's, read whole;
- the folder of each of these files (a file created beside one, which a command may have looked for
  without opening, changes it), the current folder, kit's own files and the folders of sys.path
  (installing or removing a library changes its folder).
A path is held by its identity (kit.results.cache_place.file_identity: size, mtime, ctime, inode,
device) or as absent; an absent path's ancestors are held up to the nearest that exists.

The question an answer is for: the command and every parameter of it and of `kit`, the current folder,
the environment (a digest of it: kit's options read variables), whether stdout and stderr are there and
are terminals (colours) and their encodings, and the Python (its flags and sys.path) and the kit (where
it was loaded from) running it. A kept text the stream cannot take as it is now is not printed: the
command runs.

An answer is kept only when the command validated no file itself (every verdict came from kit's cache,
so the answer says what a rerun would say, "from kit's cache" line included), ended with exit 0 or 1
and no error, and nothing of its world changed within RACY_SECONDS before the command began: ctime
cannot be set back, so the world stated after the run is the one the command read. It is printed again
only when every path of its world states the same. Answers are sealed files under the cache folder
(kit.results.sealed_lines, the cache's key: an edited one is ignored), MAX_KEPT at most; KIT_NO_CACHE
turns them off with the cache.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

import kit
from kit.results.cache_place import RACY_SECONDS, cache_folder, cache_key, file_identity

MEMO_FORMAT = 1
MAX_KEPT = 16           # answers kept per user: a few questions of a few trees
ANSWER = "answer"       # the entry holding the printed text (world entries are absolute paths)
_ABSENT = [-1]
# variables that differ between two identical shell commands and that no option reads
_UNREAD_VARIABLES = ("_", "OLDPWD", "SHLVL")


class AnswerMemo:
    """The kept answer of one question (see the module); `replay` it, or `record` the command and `keep` its
    answer at its end."""

    def __init__(self, command: str, question: Any) -> None:
        try:
            cwd = os.getcwd()
        except OSError:   # the current folder was deleted: no answer is kept or replayed for it
            cwd = None
        folder = cache_folder() if cwd is not None else None
        self.key = cache_key(folder) if folder is not None else None
        self.folder = folder / "answers" if folder is not None else None
        self.started = time.time()
        self._digest = hashlib.sha256(json.dumps(
            [MEMO_FORMAT, kit.__version__, os.path.realpath(kit.__file__), command, question, cwd,
             _environment_digest(), [_stream_facts(sys.stdout), _stream_facts(sys.stderr)], sys.executable,
             sys.version, repr(sys.flags), sys.path],
            default=str, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()
        self.file = self.folder / f"{self._digest[:32]}.lines" if self.folder is not None else None
        self._header = {"format": MEMO_FORMAT, "question": self._digest}
        self._paths: set[str] = set()       # opened or listed while recording (the audit hook's)
        self._named: list[tuple[Iterable[Any], str | None]] = []   # what the command names itself
        self._whole: list[str] = []         # folders it names, held with everything under them
        self._streams: list[tuple[str, Any, _Copy]] = []
        self._validated_before = 0
        self._excluded: tuple[str, ...] = ()

    @classmethod
    def of_context(cls, ctx: click.Context) -> "AnswerMemo":
        """The memo of the command `ctx` runs, asked with its parameters and its parents'."""
        question = []
        while ctx is not None:
            question.append([ctx.info_name, sorted((k, repr(v)) for k, v in ctx.params.items())])
            ctx = ctx.parent
        return cls(question[0][0] or "", question)

    def replay(self) -> None:
        """Print the kept answer and exit with its code, when there is one and nothing it read changed;
        else return (the command then runs)."""
        if self.file is None or self.key is None:
            return
        from kit.results.sealed_lines import read_entries

        entries = read_entries(self.file, self.key, self._header)
        answer = entries.pop(ANSWER, None)
        if not isinstance(answer, dict) or not entries or not _unchanged(entries):
            return
        out, err, code = answer.get("stdout"), answer.get("stderr"), answer.get("code")
        if not (isinstance(out, str) and isinstance(err, str) and code in (0, 1)):
            return
        if not (_can_print(sys.stdout, out) and _can_print(sys.stderr, err)):   # (a closed stream: None)
            return   # the command says it its own way
        sys.stdout.write(out)
        sys.stdout.flush()
        if err:
            sys.stderr.write(err)
            sys.stderr.flush()
        sys.exit(code)

    def record(self) -> None:
        """Begin noting what this process reads and copying what it prints (until `stop`, which the
        click context calls when the command ends)."""
        if self.file is None or self.key is None or _RECORDING:
            return
        from kit.results.cache import files_validated

        self._validated_before = files_validated()
        package = os.path.dirname(os.path.abspath(kit.__file__))
        self._excluded = tuple(os.path.join(p, "") for p in {*_library_folders(), package, os.fspath(self.folder.parent)})
        self._excluded += ("/proc/", "/sys/")   # (device nodes are left out when the world is stated)
        for name in ("stdout", "stderr"):
            real = getattr(sys, name)
            if not hasattr(real, "encoding"):
                return
        for name in ("stdout", "stderr"):
            real = getattr(sys, name)
            copy = _Copy(real)
            self._streams.append((name, real, copy))
            setattr(sys, name, copy)
        _install_hook()
        _RECORDING.append(self)
        click.get_current_context().call_on_close(self.stop)

    def stop(self) -> None:
        """Stop noting reads and copying output (the streams as they were)."""
        if self in _RECORDING:
            _RECORDING.remove(self)
        for name, real, copy in self._streams:
            if getattr(sys, name) is copy:
                setattr(sys, name, real)
        self._streams = []

    def name(self, paths: Iterable[Any], beside: str | None = None) -> None:
        """Hold files or folders the command depends on without opening or listing them in this process
        (each checkpoint, which the verdict cache stats); with `beside` (".mllog"), each .json file's
        namesake with that suffix too (its log). `paths` is read only when an answer is kept (a generator
        is fine): a run that validated files keeps none and pays nothing here."""
        if self in _RECORDING:
            self._named.append((paths, beside))

    def name_whole(self, folder: Any) -> None:
        """Hold a folder and every file and folder under it (a benchmark's: its worker processes read
        the language files a cold run needs); None: nothing."""
        if folder is not None and self in _RECORDING:
            self._whole.append(_as_read(folder))

    def note_read(self, path: str) -> None:
        """The audit hook's: a path this process opened or listed."""
        if not path.startswith(self._excluded):
            self._paths.add(path)

    def keep(self, code: int, errors: bool) -> None:
        """Keep the answer printed so far with its exit code, when it may be (see the module); never an error."""
        if self not in _RECORDING:
            return
        from kit.results.cache import files_validated

        copies = {name: copy.text() for name, _, copy in self._streams}
        validated = files_validated() != self._validated_before
        self.stop()
        if errors or code not in (0, 1) or validated:
            return
        try:
            world = self._world()
        except (OSError, ValueError):
            return
        if world is None:
            return
        entries: dict[str, Any] = {ANSWER: {"stdout": copies["stdout"], "stderr": copies["stderr"], "code": code}}
        entries.update(world)
        try:   # a text UTF-8 cannot hold (a file name's stray bytes) cannot be sealed: no answer is kept
            for name, value in entries.items():
                name.encode("utf-8")
                if name == ANSWER:
                    copies["stdout"].encode("utf-8"), copies["stderr"].encode("utf-8")
                else:
                    for inner in value:
                        inner.encode("utf-8")
        except UnicodeEncodeError:
            return
        try:
            from kit.results.sealed_lines import write_entries

            assert self.folder is not None and self.file is not None and self.key is not None
            self.folder.mkdir(parents=True, exist_ok=True)
            write_entries(self.file, self.key, self._header, entries, only=True)
            _prune(self.folder)
        except OSError:
            return

    def _world(self) -> dict[str, dict[str, list[int]]] | None:
        """folder -> {name: identity} of every path of the world, or None when one changed too recently."""
        paths = set(self._paths)
        cwd, join, fspath = os.getcwd(), os.path.join, os.fspath   # (a sweep names forty thousand files)
        for named, beside in self._named:
            texts = [join(cwd, os.fsdecode(fspath(p))) for p in named]
            paths.update(texts)
            if beside:
                paths.update(t[:-5] + beside for t in texts if t.endswith(".json"))
        for whole in self._whole:
            paths.add(whole)
            paths.update(_everything_under(whole))
        paths.add(os.getcwd())
        paths.add(os.path.dirname(os.path.abspath(kit.__file__)))
        paths.update(os.path.abspath(p) for p in sys.path if p)
        for folder, dirs, files in os.walk(os.path.dirname(os.path.abspath(kit.__file__))):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            paths.update(os.path.join(folder, f) for f in files if not f.endswith((".pyc", ".pyo")))
            paths.add(folder)
        by_folder: dict[str, dict[str, list[int]]] = {}
        limit = self.started - RACY_SECONDS
        seen: set[str] = set()
        todo = [(path, True) for path in paths]
        split, sep, ischr, isblk, isdir = os.path.split, os.sep, stat.S_ISCHR, stat.S_ISBLK, stat.S_ISDIR
        while todo:
            path, file_parent = todo.pop()
            path = path.rstrip(sep) or sep
            if path in seen:
                continue
            seen.add(path)
            folder, name = split(path)
            if not name:   # the root folder: nothing holds it
                continue
            try:
                st = os.stat(path)
            except OSError:
                identity = _ABSENT
                todo.append((folder, True))   # up to the nearest folder that is there: creating it changes that
            else:
                if ischr(st.st_mode) or isblk(st.st_mode):   # /dev/null: no file's content
                    continue
                if max(st.st_mtime, st.st_ctime) > limit:
                    return None
                identity = file_identity(st)
                if file_parent and folder not in seen and not isdir(st.st_mode):
                    # a file's folder: a file created beside it (one a command looked for without opening) changes it
                    todo.append((folder, False))
            by_folder.setdefault(folder, {})[name] = identity
        return by_folder


def _as_read(path: Any) -> str:
    """A path as the system reads it from the current folder: absolute, but never normalised by its text
    (after a linked folder, `link/..` is the link target's parent, not the current folder)."""
    return os.path.join(os.getcwd(), os.fsdecode(os.fspath(path)))


def _library_folders() -> set[str]:
    """The folders Python imports its own and installed libraries from (their files are not a command's
    input; sys.path's folders themselves are held): the standard library's and site-packages'."""
    import sysconfig

    found = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    found.update(p for p in sys.path if p and (os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")
                                               or p.endswith(".zip")))
    return {os.path.abspath(p) for p in found if p}


def _everything_under(top: str) -> Iterator[str]:
    """Every file and folder under `top`, through linked folders too (a benchmark's language folder may be a
    link: its files are stat-ed through it), each real folder once."""
    seen: set[str] = set()
    for folder, dirs, files in os.walk(top, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:   # a link back up the tree, or two links to one folder
            dirs[:] = []
            continue
        seen.add(real)
        yield from (os.path.join(folder, name) for name in (*dirs, *files))


def _unchanged(world: dict[str, Any]) -> bool:
    """Whether every path of a kept world states the same now."""
    stat, join = os.stat, os.path.join
    try:
        for folder, names in world.items():
            for name, identity in names.items():
                try:
                    st = stat(join(folder, name))
                except OSError:
                    if identity != _ABSENT:
                        return False
                    continue
                if identity != [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]:
                    return False
    except (AttributeError, TypeError):   # sealed, yet not a world this module wrote
        return False
    return True


def _environment_digest() -> str:
    """A digest of the environment (its values are never kept), without the variables a shell changes between
    two identical commands."""
    items = sorted((k, v) for k, v in os.environ.items() if k not in _UNREAD_VARIABLES)
    return hashlib.sha256(json.dumps(items).encode("utf-8", "surrogatepass")).hexdigest()


def _stream_facts(stream: Any) -> list[Any]:
    """What of an output stream changes what a command prints on it: whether there is one, whether it is
    a terminal (colours), its encoding and error handler (rich draws its tables in ASCII for one)."""
    return [stream is not None, _is_terminal(stream), getattr(stream, "encoding", None),
            getattr(stream, "errors", None)]


def _can_print(stream: Any, text: str) -> bool:
    """Whether `text` can be written on `stream` as it is (a stream to write on, an encoding that holds it)."""
    if not text:
        return True
    if stream is None or not hasattr(stream, "write"):
        return False
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict")
    except (UnicodeError, LookupError):
        return False
    return True


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _prune(folder: Path) -> None:
    """Keep the MAX_KEPT newest answers."""
    answers = sorted(folder.glob("*.lines"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in answers[MAX_KEPT:]:
        old.unlink(missing_ok=True)


class _Copy(io.TextIOBase):
    """A text stream that writes through to another and keeps a copy of what was written."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        if not isinstance(text, str):   # as a text stream answers bytes (click asks, to tell text from binary)
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._parts.append(text)
        return self._real.write(text)

    def text(self) -> str:
        """What was written."""
        return "".join(self._parts)

    def flush(self) -> None:
        self._real.flush()

    def isatty(self) -> bool:
        return _is_terminal(self._real)

    def fileno(self) -> int:
        return self._real.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:   # type: ignore[override]
        return self._real.encoding

    @property
    def errors(self) -> str | None:   # type: ignore[override]
        return getattr(self._real, "errors", None)


_RECORDING: list[AnswerMemo] = []   # the memo recording now (one at a time)
_HOOKED: list[bool] = []


def _install_hook() -> None:
    """Add the audit hook once per process (hooks cannot be removed: it does nothing unless recording)."""
    if not _HOOKED:
        sys.addaudithook(_audit)
        # a forked worker (the validation pool) reads for its parent, which names what it needs
        if hasattr(os, "register_at_fork"):   # (not on Windows, where nothing forks)
            os.register_at_fork(after_in_child=_RECORDING.clear)
        _HOOKED.append(True)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _RECORDING:
        return
    if event == "open":
        target = args[0]
    elif event == "os.listdir" or event == "os.scandir":
        target = args[0] if args and args[0] is not None else "."
    else:
        return
    if isinstance(target, int):   # a descriptor: its path was seen when it was opened
        return
    try:
        _RECORDING[0].note_read(_as_read(target))
    except Exception:   # an audit hook must never break the call it watches  # noqa: BLE001
        return
