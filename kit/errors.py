"""The few exceptions kit raises on purpose; the CLI prints them as one line.

Bottom of the import graph: imports nothing from kit.
"""

from __future__ import annotations

import errno
import os
import re


class KitError(Exception):
    """A failure kit explains in one line; `exit_code` is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The message and, when known, the fix, on one line (a very long word shortened: see shortened)."""
        text = " ".join(self.message.split())
        if self.fix:
            text = f"{text}; fix: {' '.join(self.fix.split())}"
        return shortened(text)

    def __reduce__(self) -> tuple:
        # raised in a worker process, it reaches the parent pickled: rebuilt as it was, whatever arguments
        # its class's __init__ takes (a pool that cannot unpickle an error waits for it forever)
        return _rebuilt, (type(self), self.message, self.fix), self.__dict__


def _rebuilt(cls: type[KitError], message: str, fix: str | None) -> KitError:
    error = cls.__new__(cls)
    KitError.__init__(error, message, fix=fix)
    return error


# what would break a line of output, or make it lie: control characters, Unicode's line and paragraph
# separators, the bidirectional controls and invisible characters (a name that reads backwards or hides
# a part), and lone surrogates (a file name's bytes that are not UTF-8)
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069"
                         r"\ufeff\ud800-\udfff]")


# a word of an error or warning line longer than this (a pasted file, a 5,000-character name) is shown by
# its two ends: the line stays one a terminal and a log can hold, and still says which value it was
LONG_WORD = 320
_LONG_WORD = re.compile(r"\S{%d,}" % (LONG_WORD + 1))
_HEAD, _TAIL = 200, 80


def shortened(text: str) -> str:
    """`text` with each word (a run without white space) longer than LONG_WORD characters cut to its first
    and last characters, saying how many were left out."""
    return _LONG_WORD.sub(lambda m: f"{m.group()[:_HEAD]}...({len(m.group()) - _HEAD - _TAIL} characters "
                                    f"left out)...{m.group()[-_TAIL:]}", text)


def clipped(value: object, width: int = 40) -> str:
    """The repr of a value an error line quotes, cut to `width` characters ("..." ending a cut one)."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def unshowable(text: str) -> bool:
    """Whether `text` holds a character visible() would have to escape (a control, bidirectional or
    invisible character): no name a writer gives a model, run or language holds one."""
    return _UNSHOWABLE.search(text) is not None


def visible(text: str) -> str:
    """`text` as one line of output: each control character (a newline in a file name), line separator,
    bidirectional control or invisible character, or lone surrogate shown as its escape (\\n, \\u202e,
    \\udcff), so that no name makes a line of its own or reads other than it is."""
    return _UNSHOWABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def error_line(exc: KitError) -> str:
    """The one stderr line every kit program prints for a KitError."""
    return f"kit: error: {exc.one_line()}"


def warn(message: str) -> None:
    """Print kit's one warning line on stderr: something was skipped or assumed, and the command goes on."""
    import sys

    print(f"kit: warning: {shortened(visible(message))}", file=sys.stderr)


class ConfigError(KitError):
    """Bad input: a config file, an option, a dataset file. Exit code 2."""

    exit_code = 2


class SubmitError(KitError):
    """A scheduler refused or failed a submission, or a policy check blocked it."""


class ImageError(KitError):
    """An image could not be built, converted, found or verified."""


class NoImageError(KitError):
    """A run's backend has no built image (or no artifact) for a site's container runtime. Exit
    code 2: nothing was planned or submitted."""

    exit_code = 2


class CheckpointError(KitError):
    """A checkpoint is invalid, or would be overwritten without --force."""


class RerunError(KitError):
    """A result could not be rerun (its image, weights or data are missing or not the recorded ones).
    Exit code 2: nothing was compared."""

    exit_code = 2


class MissingExtraError(KitError):
    """A backend or command needs an optional dependency that is not installed."""

    exit_code = 2

    def __init__(self, what: str, module: str, extra: str) -> None:
        super().__init__(
            f"{what} needs the Python module {module!r}, which is not installed",
            fix=f"pip install 'kit-sweep[{extra}]' (or run inside the kit image that ships it)",
        )


def service_error(exc: BaseException, doing: str, where: str, fix: str, *, after: str = "") -> KitError:
    """One kit error line for a failure of a remote service's client library (the Hub's, and the HTTP
    library under it, raise many kinds): what was being done, where, the exception's type and the first
    200 characters of its message, `after` (what that leaves), and the fix; never a traceback. Offline
    mode (HF_HUB_OFFLINE) is bad input (exit 2); anything else a failure (exit 1)."""
    name = type(exc).__name__
    said = " ".join(str(exc).split())[:200] or name
    if name == "OfflineModeIsEnabled":
        return ConfigError(f"{doing} needs the Hub at {where}, and huggingface_hub is in offline mode "
                           "(HF_HUB_OFFLINE)", fix=f"unset HF_HUB_OFFLINE, then {fix}")
    return KitError(f"{doing} failed at {where}: {name}: {said}" + (f"; {after}" if after else ""), fix=fix)


# errors of the disk or the file system, not of kit: a full, read-only or missing place to write
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG,
                         errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EEXIST, errno.EMLINK, errno.ENAMETOOLONG})


def disk_error(exc: OSError, *, kept: str = "") -> ConfigError | None:
    """The one-line error for an OSError of the disk or file system (DISK_ERRNOS), naming the file;
    None for any other. `kept` says what was left as it was (e.g. "the earlier output is left as it was")."""
    if exc.errno not in DISK_ERRNOS:
        return None
    where = f"{exc.filename}: " if exc.filename else ""
    fix = _DISK_FIXES.get(exc.errno, "free space, or write to a folder on a disk you can write")
    if exc.errno == errno.ENOENT and isinstance(exc.filename, (str, os.PathLike)) and _folder_is_there(exc.filename):
        fix = "check the path: its folder is there, the file (or what a link points at) is not"
    return ConfigError(f"{where}{os.strerror(exc.errno)}" + (f"; {kept}" if kept else ""), fix=fix)


def _folder_is_there(path: str | os.PathLike[str]) -> bool:
    """Whether the folder a missing path would be in exists."""
    try:
        return os.path.isdir(os.path.dirname(os.path.abspath(path)))
    except (OSError, ValueError):
        return False


# how a library written in Rust or C (safetensors, tokenizers) words an OS error in its own exception
_LIBRARY_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def library_disk_error(exc: BaseException, path: object) -> OSError | None:
    """The OSError a library's own exception stands for when its message carries one of the disk errors
    (DISK_ERRNOS: safetensors says "... (os error 28)" for a full disk), naming `path`; None otherwise."""
    found = _LIBRARY_OS_ERROR.search(str(exc))
    code = int(found.group(1)) if found else None
    if code not in DISK_ERRNOS:
        return None
    return OSError(code, os.strerror(code), str(path))


# what to do about each disk error that is not a full disk
_DISK_FIXES = {
    errno.EACCES: "give this user access to it (its permissions, and its folders'), or use another folder",
    errno.EPERM: "give this user access to it (its permissions, and its folders'), or use another folder",
    errno.EROFS: "write to a folder on a disk that is not mounted read-only",
    errno.ENOTDIR: "a file stands where a folder is expected in that path: move it, or use another path",
    errno.EISDIR: "a folder stands where a file is expected: move it, or use another path",
    errno.ENOENT: "check the path: a folder in it does not exist",
    errno.EEXIST: "something already stands at that path (a file where a folder should be): move it, or use "
                  "another path",
    errno.ENAMETOOLONG: "use a shorter path",
}
