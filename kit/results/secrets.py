"""Credentials in a folder about to be published: every name, every byte of every file, inside archives,
and behind the encodings a token takes when it is pasted into a file (JSON escapes, URL encoding,
base64, UTF-16).

The detectors are detect-secrets' (Yelp): its regular-expression plugins for providers' keys (AWS,
Azure, GitHub, GitLab, OpenAI, Slack, Stripe, private keys, JWTs, basic auth in URLs, ...), its keyword
plugin (`password = ...`, `aws_secret_access_key: ...`) and its base64 high-entropy plugin, with its
heuristic filters (sequential strings, UUIDs, ids, templates); plus a Hugging Face token detector
written as a detect-secrets plugin. Two of its plugins are left out on purpose: public IP addresses
are not credentials, and hex high-entropy strings are the sha256 digests a release is made of.

detect-secrets reads a file line by line with every plugin and filter on every line (about 0.16 MB/s
on checkpoint JSON here); kit runs each plugin's own expressions over whole blocks of text, each behind
a gate of literal strings read from the expression's syntax tree (text without any of them cannot
match), and hands the keyword plugin only the lines holding one of its keywords: about 6 MB/s
(`python -m bench.publish_scan`).
"""

from __future__ import annotations

import base64
import binascii
import bz2
import gzip
import io
import lzma
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote

from kit.credentials import HUGGING_FACE_TOKENS
from kit.errors import ConfigError
from kit.results.store import ENVELOPE_SUFFIX

CHUNK = 16 << 20         # a file is scanned in blocks of this size...
OVERLAP = 64 << 10       # ...each overlapping the one before, so a secret across a border is seen whole
UNPACKED_LIMIT = 1 << 30  # bytes unpacked from one file's archives before kit refuses to publish it unscanned
ARCHIVE_DEPTH = 4        # archives inside archives, followed this deep
DECODE_DEPTH = 2         # encodings inside encodings (base64 of a JSON-escaped token), undone this deep
WALK_DEPTH = 64
ENTROPY_LIMIT = 4.5      # detect-secrets' default for base64 strings
_SHOWN = 3

# names of files that hold credentials whatever they contain
SECRET_FILE_NAMES = re.compile(
    r"^(\.?netrc|_netrc|\.?git-credentials|credentials|\.?pgpass|\.?env|id_(rsa|dsa|ecdsa|ed25519)(_sk)?"
    r"|(hf_|hf-|huggingface_)?token(s)?(\.txt)?|.*\.(token|pem|key|p12|pfx|jks|keystore|ppk))$", re.IGNORECASE)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{24,}={0,2}")
# the escapes that can sit inside a token (a letter or digit as \u0068, a slash as \/); \n and \" cannot
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\([/\\])")
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_PRINTABLE = re.compile(rb"[\t\n\r\x20-\x7e]")


@dataclass(frozen=True)
class Finding:
    """One thing that looks like a credential: the file (relative to the scanned folder), where in it
    (its name, a line, an archive member) and what detect-secrets calls it. The value is never kept."""

    path: str
    where: str
    kind: str

    def __str__(self) -> str:
        return f"{self.path} ({self.where}: {self.kind})"


def scan_folder(folder: Path) -> list[Finding]:
    """Every credential-looking name or content under `folder` (each folder is an entry of its own,
    so its name is scanned once). A file too large to scan once unpacked is a ConfigError: nothing
    is published unscanned."""
    folder = Path(folder)
    findings: list[Finding] = []
    for rel in folder_names(folder):
        findings.extend(scan_name(rel))
        path = folder / rel
        if path.is_file() and not path.is_symlink():
            findings.extend(scan_file(path, rel))
    return findings


def scan_name(rel: str) -> list[Finding]:
    """Findings in the last name of a relative path (its folders are entries of their own): a
    credentials file name, or a token written into the name."""
    name = Path(rel).name
    found = [Finding(safe_path(rel), "its name", "a credentials file")] if SECRET_FILE_NAMES.match(name) else []
    return found + [Finding(safe_path(rel), "its name", kind) for kind, _ in _scan_text(name, name)]


def safe_path(rel: str) -> str:
    """`rel` as it may be shown: any name in it that holds a credential replaced by a placeholder."""
    return "/".join(_safe_name(part) for part in Path(rel).parts)


@lru_cache(maxsize=4096)
def _safe_name(name: str) -> str:
    return name if next(_scan_text(name, name), None) is None else "<a name holding a credential>"


def scan_file(path: Path, rel: str) -> list[Finding]:
    """Findings in one file's content, archives unpacked (a ConfigError past UNPACKED_LIMIT); a signed
    statement kit wrote (a DSSE envelope, kit.results.attest) is scanned as envelope_text gives it."""
    budget = [UNPACKED_LIMIT]
    shown = safe_path(rel)
    if rel.endswith(ENVELOPE_SUFFIX) and os.path.getsize(path) <= CHUNK:
        text = envelope_text(Path(path).read_bytes())
        if text is not None:
            return list(_scan_blocks(io.BytesIO(text.encode("utf-8", "surrogatepass")), shown, shown, None))
    with open(path, "rb") as fh:
        return list(_scan_stream(fh, shown, shown, 0, budget))


# the length of an Ed25519 signature, the only kind kit signs with (kit.signing)
_SIGNATURE_BYTES = 64


def envelope_text(body: bytes) -> str | None:
    """The text of a DSSE envelope to scan, or None when `body` is not one in kit's form: the envelope
    with each signature left out, then its payload decoded. A signature is public by design and as random
    as a key, so the entropy detector would take it for one; only an Ed25519 signature (64 bytes, not
    text) is left out: anything else in its place is scanned as the rest is."""
    import json

    from kit.safejson import loads_unique

    try:   # a key given twice is not kit's form: the raw bytes are scanned then, every value with them
        envelope = loads_unique(body)
        payload = base64.b64decode(envelope["payload"], validate=True)
    except (ValueError, KeyError, TypeError, binascii.Error, RecursionError):
        return None
    signatures = envelope.get("signatures") if isinstance(envelope, dict) else None
    if set(envelope) != {"payload", "payloadType", "signatures"} or not isinstance(signatures, list):
        return None
    for item in signatures:
        if not isinstance(item, dict) or set(item) != {"keyid", "sig"} or not isinstance(item["sig"], str):
            return None
        try:
            raw = base64.b64decode(item["sig"], validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) != _SIGNATURE_BYTES or len(_PRINTABLE.findall(raw)) >= 0.9 * len(raw):
            return None
    shown = {**envelope, "payload": "", "signatures": [{"keyid": i["keyid"], "sig": ""} for i in signatures]}
    return json.dumps(shown, ensure_ascii=False) + "\n" + payload.decode("utf-8", "replace")


def refuse_secrets(findings: list[Finding], folder: Path) -> None:
    """A ConfigError naming the first findings (never their values) when there are any."""
    if not findings:
        return
    more = f"; and {len(findings) - _SHOWN} more" if len(findings) > _SHOWN else ""
    raise ConfigError(f"{folder}: refusing to publish what looks like a credential: "
                      f"{'; '.join(map(str, findings[:_SHOWN]))}{more}",
                      fix="take it out of the folder (and revoke it if it is real), then publish again")


def _unlisted(exc: OSError) -> None:
    raise ConfigError(f"{exc.filename}: cannot be read ({exc.strerror}), so it cannot be checked for credentials",
                      fix="give this user read permission on it, or take it out of the folder")


def folder_names(folder: Path) -> list[str]:
    """Relative paths of everything under `folder`, sorted; links are listed and never entered; a
    ConfigError past WALK_DEPTH folders deep."""
    found: list[str] = []
    base = len(folder.parts)
    for top, dirs, names in os.walk(folder, onerror=_unlisted):   # os.walk enters no linked folder
        found.extend(Path(top, name).relative_to(folder).as_posix() for name in [*dirs, *names])
        if len(Path(top).parts) - base >= WALK_DEPTH and dirs:
            raise ConfigError(f"{Path(top)}: folders nested more than {WALK_DEPTH} deep",
                              fix="flatten the folder; a release is a few levels deep")
    return sorted(found)


def _scan_stream(fh: IO[bytes], rel: str, where: str, depth: int, budget: list[int]) -> Iterator[Finding]:
    """Findings in a byte stream: a zip's members (names and contents); a tar's members, then its bytes
    (what follows a tar's end is no member but is published all the same); a gzip, bz2 or xz stream's
    content, itself unpacked when it is packed again (a spooled copy when it must seek); else its blocks
    of text. Archives nested deeper than ARCHIVE_DEPTH, or that cannot be read (an encrypted zip), are a
    ConfigError: never published unscanned."""
    if not fh.seekable():   # the content of a compressed stream
        head = fh.peek(512)[:512] if hasattr(fh, "peek") else b""
        if not _packed(head):
            yield from _scan_blocks(fh, rel, where, budget)
            return
        fh = _spooled(fh, rel, budget)
    head = fh.read(512)
    fh.seek(0)
    if depth >= ARCHIVE_DEPTH:
        if _packed(head) or zipfile.is_zipfile(fh):
            raise ConfigError(f"{rel}: archives nested more than {ARCHIVE_DEPTH} deep ({where}): too deep to scan "
                              "for credentials", fix="publish the data unpacked, or leave the archive out")
        fh.seek(0)
        yield from _scan_blocks(fh, rel, where, budget if depth else None)
        return
    try:
        if zipfile.is_zipfile(fh):   # found by its end: a self-extracting zip starts with other bytes
            fh.seek(0)
            yield from _scan_members(_zip_members(zipfile.ZipFile(fh)), rel, where, depth, budget)
            return
        fh.seek(0)
        archive = _open_tar(fh)
        if archive is not None:
            yield from _scan_members(_tar_members(archive), rel, where, depth, budget)
        fh.seek(0)
        opener = next((open_ for magic, open_ in _STREAMS.items() if head.startswith(magic)), None)
        if opener is not None:
            inner = f"{where} unpacked" if depth else "unpacked"
            with opener(fh) as unpacked:
                if archive is not None:   # its tar's members were scanned: the rest as text
                    yield from _scan_blocks(unpacked, rel, inner, budget)
                else:
                    yield from _scan_stream(_Unseekable(unpacked), rel, inner, depth + 1, budget)
            return
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, zlib.error, lzma.LZMAError,
            RuntimeError, NotImplementedError) as exc:   # RuntimeError: an encrypted zip member
        raise ConfigError(f"{rel}: an archive kit cannot unpack to scan for credentials ({exc})",
                          fix="repair or remove the archive (an encrypted one cannot be checked), then publish "
                              "again") from None
    yield from _scan_blocks(fh, rel, where, budget if depth else None)


def _spooled(fh: IO[bytes], rel: str, budget: list[int]) -> IO[bytes]:
    """A seekable copy of an unpacked stream (in memory up to 64 MiB, then on disk), its bytes counted
    against the budget."""
    import tempfile

    copy = tempfile.SpooledTemporaryFile(max_size=64 << 20)
    while block := fh.read(CHUNK):
        _spend(budget, len(block), rel)
        copy.write(block)
    copy.seek(0)
    return copy  # type: ignore[return-value]


# compressed streams by their first bytes: each is unpacked and its content scanned (a tar inside is
# opened by tarfile first)
_STREAMS: dict[bytes, Callable[[IO[bytes]], IO[bytes]]] = {
    b"\x1f\x8b": lambda fh: gzip.GzipFile(fileobj=fh, mode="rb"),
    b"BZh": lambda fh: bz2.BZ2File(fh),
    b"\xfd7zXZ\x00": lambda fh: lzma.LZMAFile(fh),
}


def _packed(head: bytes) -> bool:
    """Whether these first bytes start an archive or a compressed stream kit would unpack."""
    return head.startswith((b"PK\x03\x04", *_STREAMS)) or head[257:262] == b"ustar"


class _Unseekable(io.RawIOBase):
    """A stream read once, front to back (an unpacked gzip, bz2 or xz stream), that can show its first
    bytes (peek) without losing them: what _scan_stream reads as text, or refuses when it is packed again
    too deep."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner, self._head = inner, b""

    def readable(self) -> bool:
        return True

    def peek(self, n: int) -> bytes:
        if len(self._head) < n:
            self._head += self._inner.read(n - len(self._head))
        return self._head

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            data, self._head = self._head + self._inner.read(), b""
            return data
        if self._head:   # the peeked bytes, then the rest up to n: a short read here would end a block early
            data, self._head = self._head[:n], self._head[n:]
            return data + self._inner.read(n - len(data)) if len(data) < n else data
        return self._inner.read(n)


def _scan_members(members: Iterator[tuple[str, IO[bytes]]], rel: str, where: str, depth: int,
                  budget: list[int]) -> Iterator[Finding]:
    """Findings in each archive member's name and content."""
    for name, member in members:
        inner = f"{where} member {_safe_name(name)!r}" if depth else f"member {_safe_name(name)!r}"
        yield from (Finding(rel, inner, kind) for kind, _ in _scan_text(name, name))
        yield from _scan_stream(member, rel, inner, depth + 1, budget)


def _open_tar(fh: IO[bytes]) -> tarfile.TarFile | None:
    """The tar archive `fh` holds (compressed or not), else None."""
    try:
        return tarfile.open(fileobj=fh, mode="r:*")
    except (tarfile.TarError, OSError, EOFError):
        return None


def _zip_members(archive: zipfile.ZipFile) -> Iterator[tuple[str, IO[bytes]]]:
    with archive:
        for info in archive.infolist():
            if not info.is_dir():
                with archive.open(info) as member:
                    yield info.filename, member


def _tar_members(archive: tarfile.TarFile) -> Iterator[tuple[str, IO[bytes]]]:
    with archive:
        for info in archive:
            member = archive.extractfile(info) if info.isfile() else None
            yield info.name, member if member is not None else io.BytesIO(b"")


def _spend(budget: list[int], n: int, rel: str) -> None:
    """Count `n` unpacked bytes against the file's budget: past it, a ConfigError (an archive bomb, or
    simply more than kit scans; either way not published unscanned)."""
    budget[0] -= n
    if budget[0] < 0:
        raise ConfigError(f"{rel}: unpacks to more than {UNPACKED_LIMIT >> 20} MiB, too much to scan for credentials",
                          fix="publish the data unpacked, or leave the archive out")


def _scan_blocks(fh: IO[bytes], rel: str, where: str, budget: list[int] | None) -> Iterator[Finding]:
    """Findings in the stream's content, read CHUNK bytes at a time with OVERLAP bytes carried over."""
    seen: set[tuple[str, str, str]] = set()
    tail, line_base = b"", 1
    while True:
        block = fh.read(CHUNK)
        if budget is not None:
            _spend(budget, len(block), rel)
        if not block:
            return
        data = tail + block
        for text, encoding in _decodings(data):
            for kind, line in _scan_text(text, rel):
                if (kind, where, encoding) in seen:
                    continue
                seen.add((kind, where, encoding))
                place = where if where != rel else (f"line {line_base + line - 1}" if not encoding else "its content")
                yield Finding(rel, f"{place}, {encoding}" if encoding else place, kind)
        carry = data[-OVERLAP:] if len(block) == CHUNK else b""
        line_base += data[:len(data) - len(carry)].count(b"\n")
        tail = carry


def _decodings(data: bytes, depth: int = 0, how: str = "") -> Iterator[tuple[str, str]]:
    """(text, how it was encoded: "" when as is) of `data` as it is and as each encoding a pasted token
    may sit behind would give it."""
    text = data.decode("utf-8", "replace")
    yield text, how
    if depth == 0 and b"\x00" in data:   # UTF-16 (either byte order): every other byte is the text
        yield data[0::2].decode("latin-1"), "UTF-16"
        yield data[1::2].decode("latin-1"), "UTF-16"
    if depth >= DECODE_DEPTH:
        return
    then = f"{how} inside " if how else ""
    for pattern, undo, name in ((_JSON_ESCAPE, _unescape_all, "escaped"), (_URL_ESCAPE, unquote, "URL-encoded")):
        changed = _lines_matching(pattern, text)
        if changed:
            yield from _decodings(undo(changed).encode("utf-8", "replace"), depth + 1, f"{then}{name}")
    decoded = b"\n".join(_base64_runs(text))
    if decoded:
        yield from _decodings(decoded, depth + 1, f"{then}base64")


def _lines_matching(pattern: re.Pattern[str], text: str) -> str:
    """The lines of `text` in which `pattern` occurs, joined: an encoding is undone only where it is
    used, so it costs nothing on text that does not use it."""
    if not pattern.search(text):
        return ""
    return "\n".join(line for line in text.split("\n") if pattern.search(line))


def _unescape_all(text: str) -> str:
    return _JSON_ESCAPE.sub(_unescape, text)


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16)) if match.group(1) else match.group(2)


def _base64_runs(text: str) -> Iterator[bytes]:
    """The bytes of each run of base64 (standard or URL-safe) in `text` that decodes to mostly printable text."""
    for run in _BASE64_RUN.findall(text):
        body = run.rstrip("=")
        for offset in range(4):   # a run may start mid-group when the base64 sits inside a longer word
            part = body[offset:]
            part = part[:len(part) - len(part) % 4 if len(part) % 4 != 1 else len(part) - 1]
            try:
                raw = base64.b64decode(part.replace("-", "+").replace("_", "/") + "=" * (-len(part) % 4))
            except (binascii.Error, ValueError):
                continue
            if raw and len(_PRINTABLE.findall(raw)) >= 0.9 * len(raw):
                yield raw
                break


def _scan_text(text: str, filename: str) -> Iterator[tuple[str, int]]:
    """(detector's name, 1-based line) of the first credential-looking value of each detector in `text`."""
    detectors = _detectors()
    lowered = text.lower()
    for plugin, patterns in detectors.regex:
        for pattern in patterns:
            match = next((m for m in pattern.finditer(text, lowered) if not _filtered(_value(m), plugin)), None)
            if match is not None:
                yield plugin.secret_type, text.count("\n", 0, match.start()) + 1
                break
    for match in detectors.entropy.regex.finditer(text):
        value = match.group(2)
        if len(value) >= 20 and detectors.entropy.calculate_shannon_entropy(value) > ENTROPY_LIMIT \
                and not _filtered(value, detectors.entropy, _line_at(text, match.start())[1]) \
                and not any(_base64_runs(value)):   # base64 of text is not a key: its text is scanned itself
            yield detectors.entropy.secret_type, text.count("\n", 0, match.start()) + 1
            break
    lines_done: set[int] = set()
    for match in detectors.keyword_gate.finditer(lowered):   # positions differ only past a letter lower() lengthens
        start, line = _line_at(text, match.start())
        if start in lines_done:
            continue
        lines_done.add(start)
        if any(not _filtered(secret.secret_value or "", detectors.keyword, line)
               for secret in detectors.keyword.analyze_line(filename=filename, line=line, line_number=0)):
            yield detectors.keyword.secret_type, text.count("\n", 0, start) + 1
            break


def _value(match: re.Match[str]) -> str:
    """The secret a detector's expression matched: its first non-empty group, as detect-secrets takes it."""
    return next(filter(None, match.groups()), match.group(0))


def _line_at(text: str, pos: int, reach: int = 2048) -> tuple[int, str]:
    """(where it starts, the line around `pos`), at most `reach` characters either side (a file may be
    one long line)."""
    start = text.rfind("\n", max(0, pos - reach), pos) + 1 or max(0, pos - reach)
    end = text.find("\n", pos, pos + reach)
    return start, text[start:end if end >= 0 else pos + reach]


def _filtered(secret: str, plugin: Any, line: str = "") -> bool:
    """Whether detect-secrets' heuristic filters say `secret` is not a credential (a sequence, a UUID,
    an id, a template)."""
    from detect_secrets.filters import heuristic

    return (heuristic.is_sequential_string(secret) or heuristic.is_potential_uuid(secret)
            or heuristic.is_templated_secret(secret) or heuristic.is_prefixed_with_dollar_sign(secret)
            or (bool(line) and heuristic.is_likely_id_string(secret, line, plugin)))


@dataclass(frozen=True)
class _Detectors:
    regex: tuple[tuple[Any, tuple[_Gated, ...]], ...]   # (plugin, its expressions)
    keyword: Any
    keyword_gate: re.Pattern[str]
    entropy: Any


@lru_cache(maxsize=1)
def _detectors() -> _Detectors:
    """detect-secrets' plugins as kit uses them (see the module), built once."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.plugins import keyword
        from detect_secrets.plugins.base import RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
        from detect_secrets.plugins.ip_public import IPPublicDetector
    except ImportError:
        raise ConfigError("detect-secrets is not installed, so a release cannot be checked for credentials",
                          fix="pip install 'kit-sweep[publish]'") from None

    class HuggingFaceTokenDetector(RegexBasedDetector):
        """Hugging Face user and organisation access tokens (hf_ and api_org_ then 30+ letters or digits)."""

        secret_type = "Hugging Face Token"
        denylist = HUGGING_FACE_TOKENS

    plugins = [HuggingFaceTokenDetector(), *(cls() for cls in get_mapping_from_secret_type_to_class().values()
                                            if issubclass(cls, RegexBasedDetector) and cls is not IPPublicDetector)]
    return _Detectors(regex=tuple((plugin, tuple(map(_gated, plugin.denylist))) for plugin in plugins),
                      keyword=keyword.KeywordDetector(),
                      keyword_gate=re.compile("|".join(keyword.DENYLIST)),
                      entropy=Base64HighEntropyString(limit=ENTROPY_LIMIT))


_PRODUCT_LIMIT = 256   # strings a gate may list before it is cut short
_GATE_MIN = 3          # a gate shorter than this would pass nearly every text


@dataclass(frozen=True)
class _Gated:
    """A detector's expression with its gate: literal strings (lower case) one of which every match
    holds, or None when no such short list exists; text without any of them cannot match."""

    pattern: re.Pattern[str]
    gate: re.Pattern[str] | None

    def finditer(self, text: str, lowered: str) -> Iterator[re.Match[str]]:
        """The expression's matches in `text`, none sought where the gate says there can be none."""
        if self.gate is None or self.gate.search(lowered):
            yield from self.pattern.finditer(text)


def _gated(pattern: re.Pattern[str]) -> _Gated:
    """`pattern` with the gate worked out from its syntax tree (see _Gated)."""
    try:
        from re import _parser   # type: ignore[attr-defined]

        needed = _required(list(_parser.parse(pattern.pattern, pattern.flags)))
    except Exception:   # an expression this reading does not follow is simply run everywhere
        needed = None
    if not needed or min(map(len, needed)) < _GATE_MIN:
        return _Gated(pattern, None)
    return _Gated(pattern, re.compile("|".join(sorted(map(re.escape, needed), key=len, reverse=True))))


def _required(items: list[tuple[Any, Any]]) -> set[str] | None:
    """Strings one of which any match of the node sequence holds, the most selective such list found
    (longest shortest string), or None."""
    from re import _constants as c   # type: ignore[attr-defined]

    candidates: list[set[str]] = []
    run: set[str] | None = None
    for op, av in items:
        exact = _exact(op, av)
        if exact is None:
            if run:
                candidates.append(run)
            run = None
            inner = None
            if op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
                inner = _required(list(av[2]))
            elif op is c.SUBPATTERN:
                inner = _required(list(av[3]))
            elif op is c.BRANCH:
                alts = [_required(list(alt)) for alt in av[1]]
                inner = set().union(*alts) if alts and all(alts) else None
            if inner:
                candidates.append(inner)
            continue
        if run is None:
            if "" in exact:
                continue   # an optional part is never required: a run starts at what must be there
            run = exact
            continue
        product = {a + b for a in run for b in exact}
        if len(product) > _PRODUCT_LIMIT:
            candidates.append(run)
            run = None if "" in exact else exact
        else:
            run = product
    if run:
        candidates.append(run)
    candidates = [cand for cand in candidates if cand and "" not in cand]
    return max(candidates, key=lambda cand: (min(map(len, cand)), -len(cand)), default=None)


def _exact(op: Any, av: Any) -> set[str] | None:
    """Every string (lower case) the node can match, when that is a short list; else None."""
    from re import _constants as c   # type: ignore[attr-defined]

    if op is c.LITERAL:
        return {chr(av).lower()}
    if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        return {""}
    if op is c.IN and all(o is c.LITERAL for o, _ in av) and len(av) <= 8:
        return {chr(v).lower() for _, v in av}
    if op is c.SUBPATTERN:
        return _exact_seq(list(av[3]))
    if op is c.BRANCH:
        alts = [_exact_seq(list(alt)) for alt in av[1]]
        return set().union(*alts) if all(a is not None for a in alts) else None
    if op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[1] <= 1:
        body = _exact_seq(list(av[2]))
        return None if body is None else (body | {""} if av[0] == 0 else body)
    return None


def _exact_seq(items: list[tuple[Any, Any]]) -> set[str] | None:
    """Every string a node sequence can match, when that is a short list; else None."""
    result = {""}
    for op, av in items:
        part = _exact(op, av)
        if part is None:
            return None
        result = {a + b for a in result for b in part}
        if len(result) > _PRODUCT_LIMIT:
            return None
    return result
