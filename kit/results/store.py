"""Where checkpoints live and how they are written: atomically, so a kill at any
instant leaves the old complete file or none, never a half-written one."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kit.config.names import run_file_stem
from kit.errors import ConfigError
from kit.files import child_path, name_part, regular_file_here, write_text_atomic
from kit.results import keys
from kit.results.json_text import indented_json


def checkpoint_path(results: Path, run: str, language: str) -> Path:
    """RESULTS/<language>/<run with '/' -> '__'>.json; refuses names that would leave RESULTS."""
    return checkpoint_paths(results, [(run, language)])[0]


def checkpoint_paths(results: Path, pairs: list[tuple[str, str]]) -> list[Path]:
    """checkpoint_path of each (run, language), in order; each run and language checked once (a sweep's
    thousands of pairs share a few hundred of each)."""
    root = results if isinstance(results, Path) else Path(results)
    folders: dict[str, Path] = {}
    stems: dict[str, str] = {}
    out = []
    for run, language in pairs:
        folder = folders.get(language)
        if folder is None:
            folder = folders[language] = root / name_part(language, "language")
        stem = stems.get(run)
        if stem is None:
            stem = stems[run] = f"{name_part(run_file_stem(run), 'run name')}.json"
        out.append(child_path(folder, stem))
    return out


def dumps_checkpoint(data: dict[str, Any]) -> str:
    """The canonical text of a checkpoint: sorted keys, UTF-8 kept, indent 2, final newline (json.dumps'
    text, made faster by kit.results.json_text)."""
    return indented_json(data) + "\n"


def write_checkpoint(path: Path, data: dict[str, Any]) -> None:
    """Atomically write one checkpoint in the canonical format."""
    write_text_atomic(path, dumps_checkpoint(data))


MLLOG_SUFFIX = ".mllog"   # the :::MLLOG log beside a checkpoint: <stem>.mllog


def mllog_path(checkpoint: Path) -> Path:
    """The :::MLLOG file that sits beside a checkpoint."""
    return Path(checkpoint).with_suffix(MLLOG_SUFFIX)


# the signed statement of a checkpoint (kit.results.attest) sits beside it as <stem>.intoto.jsonl (the SLSA
# convention for attestation files), a name no checkpoint glob (*.json) matches
ENVELOPE_SUFFIX = ".intoto.jsonl"


def envelope_path(checkpoint: Path) -> Path:
    """The envelope file of a checkpoint: <stem>.intoto.jsonl beside it."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.stem + ENVELOPE_SUFFIX)


def pair_files(checkpoint: Path) -> tuple[Path, Path, Path]:
    """A checkpoint's own files by name: the checkpoint, its :::MLLOG log and its signed statement (envelope)."""
    checkpoint = Path(checkpoint)
    return checkpoint, mllog_path(checkpoint), envelope_path(checkpoint)


def travelling_files(checkpoint: Path, to: Path) -> list[tuple[Path, Path]]:
    """The files that go with a checkpoint copied to `to` (a release, a collect), each with its place beside
    `to`: the checkpoint, its log and its signed statement, those of them that stand beside it as regular
    files (a link, folder or pipe at one of those names is not the site's own file, and travels nowhere). A
    ConfigError names one that cannot be read, so that no copy goes out without a file it should hold."""
    out = []
    for source, place in zip(pair_files(checkpoint), pair_files(to)):
        if not regular_file_here(source):
            continue
        try:
            with open(source, "rb"):
                pass
        except OSError as exc:
            raise ConfigError(f"{source}: cannot be read ({exc.strerror or exc})",
                              fix="make it readable (or move it away: a result travels without it), then run "
                                  "the command again") from None
        out.append((source, place))
    return out


# The hidden folder of a language folder that keeps checkpoints replaced by a rerun (stale, or invalid
# with --force) with their logs: RESULTS/<language>/.superseded/<stem>.<UTC time>.json
SUPERSEDED_DIR = ".superseded"


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def _move_aside(path: Path, target: Path) -> None:
    """Move the file or link at `path` to `target`; a link stays a link to what it pointed at (its target
    untouched), its text made relative to its new folder when it was relative."""
    if not path.is_symlink():
        os.replace(path, target)
        return
    text = os.readlink(path)
    if not os.path.isabs(text):
        text = os.path.join(os.path.relpath(path.parent, target.parent), text)
    os.symlink(text, target)   # the kept link first: a kill between the two leaves both, never neither
    os.unlink(path)


def set_aside(checkpoint: Path) -> Path | None:
    """Move a checkpoint, its log and its signed statement into the language folder's .superseded/ (time-stamped), so
    that a rerun never destroys a result; a link at one of those names is kept there as a link, its target
    untouched. The checkpoint's new place, or None when no file or link stands at its name."""
    checkpoint = Path(checkpoint)
    if not (checkpoint.is_symlink() or checkpoint.is_file()):
        return None
    keep = checkpoint.parent / SUPERSEDED_DIR
    keep.mkdir(exist_ok=True)
    target = keep / f"{checkpoint.stem}.{_stamp()}.json"
    # the checkpoint last; its statement goes with it, never to the rerun
    for part, place in reversed(list(zip(pair_files(checkpoint), pair_files(target)))):
        if part.is_symlink() or part.is_file():
            _move_aside(part, place)
    return target


def keep_aside(path: Path, label: str, suffix: str | None = None) -> Path:
    """Move the file at `path` into its folder's .superseded/, time-stamped and marked `label` ("not-a-log")
    before its `suffix` (its last one by default; ".intoto.jsonl" for an envelope, since a run's name holds
    dots of its own): what kit replaces that it did not write is kept, never lost; its new place."""
    path = Path(path)
    suffix = path.suffix if suffix is None else suffix
    stem = path.name[:-len(suffix)] if suffix and path.name.endswith(suffix) else path.name
    keep = path.parent / SUPERSEDED_DIR
    keep.mkdir(exist_ok=True)
    target = keep / f"{stem}.{_stamp()}.{label}{suffix}"
    _move_aside(path, target)
    return target


def keep_foreign_log(log: Path) -> Path | None:
    """Before a job's log replaces what is at `log`: a regular file there that is no :::MLLOG log (a user's
    own notes under that name) is moved into .superseded/ (time-stamped) rather than lost; its new place,
    or None when nothing was moved (no file, or a log of an earlier run of the pair, which is kit's)."""
    log = Path(log)
    try:
        if log.is_symlink() or not log.is_file():
            return None
        with open(log, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    if not head or head.lstrip().startswith(b":::MLLOG"):
        return None
    return keep_aside(log, "not-a-log")


# The folder of a results tree that holds the system descriptions jobs write (RESULTS/systems/).
SYSTEMS_DIR = "systems"
# Folders of a results tree that hold no checkpoints (system descriptions, reports, engines' own logs).
NON_LANGUAGE_DIRS = frozenset({SYSTEMS_DIR, "report", "logs"})


# lrb keeps results it no longer counts under RESULTS/archive/ (its active readers skip every archive
# subtree: tests/unit/test_archive_boundary.py there); kit's commands skip it too and say how many files
# they left there (archive_note). Pointing a command at a folder inside the archive reads that folder.
ARCHIVE_DIR = "archive"


def iter_checkpoint_files(results: Path) -> list[Path]:
    """Every RESULTS/<language>/<run>.json, every RESULTS/<run>.json (lrb's top-level results), every
    RESULTS/<batch>/<run>.json (lrb's batch folders) and every RESULTS/<batch>/<language>/<run>.json
    (lrb's multilingual writer given a batch as its output folder), sorted; hidden names, non-language
    folders and RESULTS/archive/ (lrb's discovery leaves it out: archived_files) are skipped. Whatever
    stands at such a name is listed, a regular file or not (a folder, a pipe, a broken link: the reader
    then says what it is, never skips it); a folder that cannot be listed is a ConfigError naming it.
    A .json file anywhere else is not a checkpoint's place: unread_files lists those."""
    results = Path(results)
    if not results.is_dir():
        return []
    found = []
    for entry in _listed(results):
        if entry.name.startswith("."):
            continue
        if entry.name.endswith(".json"):   # (a folder named like kit's own, pointed at, is read as asked)
            found.append(results / entry.name)
        if entry.name in NON_LANGUAGE_DIRS or entry.name == ARCHIVE_DIR or not entry.is_dir():
            continue
        folder = results / entry.name
        batch = not _LANGUAGE_CODE.fullmatch(entry.name)
        for sub in _listed(folder):
            if sub.name.startswith("."):
                continue
            if sub.name.endswith(".json"):
                found.append(folder / sub.name)
            if batch and sub.name not in NON_LANGUAGE_DIRS and _LANGUAGE_CODE.fullmatch(sub.name) and sub.is_dir():
                found += [folder / sub.name / leaf.name for leaf in _listed(folder / sub.name)
                          if leaf.name.endswith(".json") and not leaf.name.startswith(".")]
    return sorted(found)


def json_files(root: Path, skip_dirs: frozenset[str] | set[str]) -> list[Path]:
    """Every *.json file under root (at any depth, in path order), except hidden files and folders (kit's
    .superseded/ copies) and what lies under a folder named in skip_dirs. A linked folder is read through,
    as status reads it, each real folder once. os.walk on strings: a release tree holds thousands of files."""
    found: list[tuple[tuple[str, ...], str]] = []
    seen: set[tuple[int, int]] = set()
    for top, dirs, names in os.walk(root, onerror=_unlisted, followlinks=True):
        try:
            st = os.stat(top)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:   # a loop of links, or one folder reached twice
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs[:] = [d for d in dirs if d not in skip_dirs and not d.startswith(".")]
        parts = tuple(Path(top).relative_to(root).parts)
        # a folder named *.json is listed too (validated as "not a regular file"), as a glob would
        found += [(parts + (name,), os.path.join(top, name)) for name in (*names, *dirs)
                  if name.endswith(".json") and not name.startswith(".")]
    found.sort()
    return [Path(path) for _, path in found]


def _unlisted(exc: OSError) -> None:
    raise unlisted_folder(exc)


def unread_files(results: Path) -> list[Path]:
    """The .json files under RESULTS (hidden names, its archive/ and non-language folders left out) that lie
    where no checkpoint lies (iter_checkpoint_files): deeper than a batch's language folders, or in a
    folder below a language folder. Every command that reads a tree says how many it left there."""
    results = Path(results)
    if not results.is_dir():
        return []
    return sorted(unread_among(results, json_files(results, NON_LANGUAGE_DIRS | {ARCHIVE_DIR}))
                  + reserved_files(results))


def reserved_files(results: Path) -> list[Path]:
    """The .json files in the folders of RESULTS that kit keeps for its own files (systems/, report/, logs/:
    NON_LANGUAGE_DIRS) that are not what kit keeps there: a system description directly in systems/, the
    files of a report holding kit's inventory, lighteval's logs under logs/lighteval/. No command reads
    them as checkpoints (lrb names its batch folders freely: one may be called report), and each says so."""
    from kit.outputs import INVENTORY

    results = Path(results)
    out: list[Path] = []
    for name in sorted(NON_LANGUAGE_DIRS):
        folder = results / name
        if not folder.is_dir() or (name == "report" and (folder / INVENTORY).is_file()):
            continue
        skip = frozenset({"lighteval"}) if name == "logs" else frozenset()
        out += [path for path in json_files(folder, skip) if not (name == SYSTEMS_DIR and path.parent == folder)]
    return out


def why_unread(results: Path, path: Path) -> str:
    """Why a file unread_files names is not read: where it lies, in a few words."""
    first = Path(path).relative_to(results).parts[0]
    if first in NON_LANGUAGE_DIRS:
        return f"lies in {first}/, a folder kit keeps for its own files (system descriptions, reports, logs)"
    return "lies deeper than a checkpoint lies"


def unread_among(results: Path, found: list[Path]) -> list[Path]:
    """Those of `found` (json_files of RESULTS) that unread_files names: no checkpoint's place, not under
    RESULTS/archive/ (which archive_note counts). For a command that has walked the tree already."""
    results = Path(results)
    listed = set(iter_checkpoint_files(results))
    out = []
    for path in found:
        if path in listed:
            continue
        parts = path.relative_to(results).parts
        if parts[0] != ARCHIVE_DIR and not any(part.startswith(".") for part in parts):
            out.append(path)
    return out


def _listed(folder: Path) -> list[os.DirEntry[str]]:
    """The entries of a results folder; one that cannot be listed is a ConfigError (its checkpoints
    would otherwise go uncounted without a word)."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError as exc:
        raise unlisted_folder(exc) from None


def unlisted_folder(exc: OSError) -> ConfigError:
    """The error for a folder of a results tree that cannot be listed (`exc`, from listing it): every
    reader of a tree stops on it, rather than leave its checkpoints out without a word."""
    return ConfigError(f"{exc.filename}: results folder cannot be read ({exc.strerror})",
                       fix="give this user read and search permission on it (chmod u+rx), or move it out "
                           "of the results tree")


def linked_part(results: Path, checkpoint: Path, *, log: bool = True) -> Path | None:
    """The link that stands in a checkpoint's place in a results tree: the checkpoint, its log (unless
    `log` is False: a linked log already makes its checkpoint invalid evidence), or a folder between
    RESULTS and it; None when there is none. What publishes or certifies a tree (check, collect, export,
    release) holds its sites' own files, never what a link points at."""
    for path in (checkpoint, mllog_path(checkpoint)) if log else (checkpoint,):
        if path.is_symlink():
            return path
    try:
        inside = Path(checkpoint).relative_to(results).parts[:-1]   # the folders below RESULTS
    except ValueError:   # not named under RESULTS: only the file and its log are its own
        return None
    folder = Path(results)
    for part in inside:
        folder = folder / part
        if folder.is_symlink():
            return folder
    return None


def archived_files(results: Path) -> list[Path]:
    """The result files under RESULTS/archive/, at any depth, sorted: left out of every count, as lrb's
    own discovery leaves them out."""
    archive = Path(results) / ARCHIVE_DIR
    if not archive.is_dir() or archive.is_symlink():
        return []
    return sorted(p for p in archive.rglob("*.json") if not p.name.startswith(".") and p.is_file())


def archive_note(results: Path) -> str | None:
    """One line saying how many files under RESULTS/archive/ were not counted and how to read them; None
    when there are none."""
    archived = archived_files(results)
    if not archived:
        return None
    archive = Path(results) / ARCHIVE_DIR
    folders = sorted({p.relative_to(archive).parts[0] for p in archived if p.parent != archive})
    where = f" (in {', '.join(folders)})" if folders else ""
    return (f"{len(archived)} file(s) under {archive.as_posix()}/ not counted{where}, as lrb's discovery leaves "
            "its archive out; point the command at a folder inside it to read them")


def left_out_note(results: Path) -> str | None:
    """archive_note, and one line more when .json files lie where no checkpoint lies (unread_files),
    naming their folders and how to read them; None when nothing was left out."""
    unread = unread_files(results)
    lines = [line for line in (archive_note(results),) if line]
    root = Path(results)
    reserved = [p for p in unread if p.relative_to(root).parts[0] in NON_LANGUAGE_DIRS]
    unread = [p for p in unread if p not in reserved]
    if reserved:
        folders = sorted({p.relative_to(root).parts[0] for p in reserved})
        lines.append(f"{len(reserved)} .json file(s) under {root.as_posix()}/ not read: they lie in "
                     f"{', '.join(f + '/' for f in folders)}, a folder kit keeps for its own files (system "
                     "descriptions, reports, logs); give the folder another name to read it as a batch")
    if unread:
        folders = sorted({p.parent.relative_to(root).as_posix() for p in unread})
        shown = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3 else "")
        first = unread[0].relative_to(root).parts[0]
        # a batch folder read on its own makes its folders languages; a language folder's own subfolder
        # would then be taken for one
        how = ("move them out of the results folder, or into a results tree of their own"
               if _LANGUAGE_CODE.fullmatch(first) else
               f"point the command at a folder nearer them (such as {(root / first).as_posix()}) to read them")
        lines.append(f"{len(unread)} .json file(s) under {root.as_posix()}/ not read: they lie deeper than a "
                     f"checkpoint lies (in {shown}); {how}")
    return "; ".join(lines) or None


def collection_of(results: Path, path: Path, language: str) -> str:
    """The collection a checkpoint belongs to, as lrb's leaderboards group files: "" for the tree's own
    (kit's RESULTS/<language>/ folders and lrb's top-level files, lrb's active leaderboard), else the
    batch folder it lies in (lrb's qwen3-20260913/, strict-8-tokens/, and RESULTS/<batch>/<language>/:
    each has its own leaderboard). A folder named like the file's language is a language folder, not a batch."""
    folder = Path(path).parent
    if folder == Path(results):
        return ""
    try:
        inside = folder.relative_to(results).parts
    except ValueError:
        inside = (folder.name,)
    if len(inside) >= 2:   # RESULTS/<batch>/<language>/
        return inside[0]
    return "" if folder.name == language else folder.name


# BCP 47's code for an undetermined language: that of an lrb file recording none (lrb's single-language
# archive) that sits at the top of RESULTS or in a folder not named like a language (a dated batch).
UNDETERMINED_LANGUAGE = "und"
# a language tag as folders name languages, in its written case: lrb's own (fr, ceb: two or three lower-case
# letters), then at most a script in title case and a region in upper case or digits (pt-BR, zh-Hant,
# sr-Latn-RS, es-419) and variants that begin with a digit (de-1996). A folder of lower-case words
# (new-models, low-temp, max-tokens, llm-judge) or a dated one (new-models-20260914) is lrb's batch, never a
# language: lrb names its batches freely. A file recording its language counts for it wherever it lies.
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][A-Z][a-z]{3})?(?:[-_](?:[A-Z]{2}|[0-9]{3}))?(?:[-_][0-9][A-Za-z0-9]{3})*")


def names_a_language(folder: str) -> bool:
    """Whether a folder's name is a language code as folders name languages (a language folder), not a
    batch's name (lrb's qwen3-20260913/, b1/) or a tree's own."""
    return _LANGUAGE_CODE.fullmatch(folder) is not None


def language_folder(results: Path, path: Path) -> str | None:
    """The name of the folder a checkpoint lies in when that folder is a language folder of RESULTS
    (RESULTS/fr/...: named like a language code), else None (a top-level file, a batch folder)."""
    folder = (path if isinstance(path, Path) else Path(path)).parent
    # the name first: a sweep asks for every file, and comparing paths costs more than matching a name
    if _LANGUAGE_CODE.fullmatch(folder.name) and folder != (results if isinstance(results, Path) else Path(results)):
        return folder.name
    return None


def file_language(results: Path, path: Path, metadata: Any) -> str:
    """The language a checkpoint counts for: its metadata.language; for an lrb file that records none,
    its folder's name when that is a language code (RESULTS/fr/...), else UNDETERMINED_LANGUAGE (a
    file at the top of RESULTS or in a batch folder such as lrb's qwen3-20260913/)."""
    recorded = metadata.get(keys.LANGUAGE) if isinstance(metadata, dict) else None
    if isinstance(recorded, str) and recorded:
        return recorded
    return language_folder(results, path) or UNDETERMINED_LANGUAGE
