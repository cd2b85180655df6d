"""A file of named JSON entries, one per line, sealed with an HMAC and read or rewritten a line at a
time: the checkpoint cache's two files (kit.results.cache). A release-size tree's sections file is
tens of MB; read as one document, its bytes and its whole parse would be held at once (several times
what is kept of it), and every save would parse and write all of it again.

    {"format": 5, "code": "...", "results": "..."}    the header: what wrote it, and for which tree
    "<name>"<TAB>{entry}                               an entry per line (JSON text holds no raw tab or newline)
    #hmac-sha256 <hex>                                 HMAC-SHA256 of every byte above it, under the user's key

A file whose header does not match, whose HMAC does not, or that does not end in its HMAC line is read
as empty: nothing in it is used. A rewrite copies the lines of entries that did not change as they
are, after the old file's HMAC was checked, and seals the new file whole.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from kit import safejson
from kit.files import sweep_temporary_files, temporary_path

MAC_PREFIX = b"#hmac-sha256 "
HEADER_LIMIT = 1 << 16   # a header is a few hundred bytes; a longer first line is another format


def read_entries(path: Path, key: bytes, header: Mapping[str, Any],
                 keep: Callable[[str, Any], Any] | None = None) -> dict[str, Any]:
    """name -> entry (or keep(name, entry), applied as each line is read) of a sealed file whose header holds
    `header`'s items; {} for a file that is missing, of another header, edited or cut short."""
    out: dict[str, Any] = {}
    try:
        with open(path, "rb") as fh:
            mac = _header_mac(fh, key, header)
            if mac is None:
                return {}
            for line in fh:
                if line.startswith(MAC_PREFIX):
                    return out if _sealed(line, mac) and not fh.read(1) else {}
                mac.update(line)
                name, entry = _split(line)
                value = safejson.loads_own(entry)
                out[name] = keep(name, value) if keep is not None else value
    except (OSError, ValueError, TypeError, RecursionError):
        return {}
    return {}   # no HMAC line: cut short


def write_entries(path: Path, key: bytes, header: Mapping[str, Any], changed: Mapping[str, Any],
                  merge: Callable[[Any, Any], Any] | None = None, *, only: bool = False) -> None:
    """Rewrite the file (a temporary beside it, renamed in) with the entries it holds now, those named
    in `changed` replaced by theirs (merge(old, new) when `merge` is given and an old one is there);
    with `only`, with the entries of `changed` alone. The old lines are copied only when the old file
    is sealed under `key` with this header. OSError when it cannot be written."""
    sweep_temporary_files(path.parent)   # a killed writer's (tens of MB for a release's sections)
    tmp = temporary_path(path, "lines")
    mac = hmac.new(key, digestmod=hashlib.sha256)
    try:
        with open(tmp, "wb") as out:
            def put(data: bytes) -> None:
                mac.update(data)
                out.write(data)

            put(_dumps(dict(header)).encode("utf-8") + b"\n")
            old: dict[str, Any] = {}
            for name, line in () if only else _old_lines(path, key, header):
                if name not in changed:
                    put(line)
                elif merge is not None:
                    try:
                        old[name] = safejson.loads_own(_split(line)[1])
                    except (ValueError, RecursionError):   # sealed, yet not an entry: replaced, not merged
                        pass
            for name, entry in changed.items():
                if name in old:
                    entry = merge(old[name], entry)   # type: ignore[misc]   # old is filled only with merge
                try:
                    line = _dumps(name).encode("utf-8") + b"\t" + _dumps(entry).encode("utf-8") + b"\n"
                except UnicodeEncodeError:   # a lone surrogate (a "\\ud800" escape in a checkpoint): not kept
                    continue
                put(line)
            out.write(MAC_PREFIX + mac.hexdigest().encode() + b"\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _old_lines(path: Path, key: bytes, header: Mapping[str, Any]) -> Iterator[tuple[str, bytes]]:
    """(name, line) of each entry of the file there now, when it is sealed with this header; none else.
    Checked first, whole, then read again from the same open file: a line is never copied unchecked."""
    try:
        fh = open(path, "rb")
    except OSError:
        return
    with fh:
        try:
            mac = _header_mac(fh, key, header)
            if mac is None:
                return
            start = fh.tell()
            for line in fh:
                if line.startswith(MAC_PREFIX):
                    if not _sealed(line, mac) or fh.read(1):
                        return
                    break
                mac.update(line)
            else:
                return   # cut short
            fh.seek(start)
            for line in fh:
                if line.startswith(MAC_PREFIX):
                    return
                yield _split(line)[0], line
        except (OSError, ValueError, TypeError, RecursionError):
            return


def _header_mac(fh: IO[bytes], key: bytes, header: Mapping[str, Any]) -> Any:
    """The HMAC begun with the file's header line, or None when that line is not one with `header`'s items."""
    first = fh.readline(HEADER_LIMIT)
    if not first.endswith(b"\n"):
        return None
    doc = safejson.loads_own(first)
    if not isinstance(doc, dict) or any(doc.get(k) != v for k, v in header.items()):
        return None
    mac = hmac.new(key, digestmod=hashlib.sha256)
    mac.update(first)
    return mac


def _sealed(line: bytes, mac: Any) -> bool:
    return hmac.compare_digest(line[len(MAC_PREFIX):].rstrip(b"\n"), mac.hexdigest().encode())


def _split(line: bytes) -> tuple[str, bytes]:
    """An entry line's name and its entry's JSON text (ValueError when it is not such a line)."""
    name_text, tab, entry = line.partition(b"\t")
    name = safejson.loads_own(name_text)
    if not tab or not isinstance(name, str):
        raise ValueError("not an entry line")
    return name, entry


# json.dumps(value, ensure_ascii=False, separators=(",", ":")), its encoder made once (a save writes an entry per file)
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
