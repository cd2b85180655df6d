"""The weights manifest: what `kit weights stage` wrote for one snapshot (every file's size and
sha256, the model, its revision, the backends it was staged for), kept beside the snapshot at
`<cache>/models--org--name/kit-manifests/<revision>.json`, outside `snapshots/` so the Hugging
Face cache layout stays as huggingface_hub expects it.

The manifest carries its own digest (`digest`: sha256 of its canonical JSON without that key), so
a job can trust it after checking sizes only, and a checkpoint can name the exact file set it
loaded by that one digest."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kit import safejson
from kit.errors import ConfigError
from kit.files import file_sha256, read_regular_file, write_text_atomic

MANIFEST_VERSION = 1
MANIFEST_DIR = "kit-manifests"
PARTS_DIR = ".kit-parts"          # beside snapshots/ on a site: files a push has not finished
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")
_HEX40 = re.compile(r"^[0-9a-f]{40}\Z")
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
_BAD_NAME = re.compile(r"[\x00-\x1f\\]")
_KEYS = {"kit_weights_manifest", "model", "revision", "backends", "files", "digest"}


@dataclass(frozen=True)
class FileEntry:
    """One file of a snapshot: its size in bytes and its sha256."""

    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """The staged files of one model at one revision."""

    model: str
    revision: str
    files: dict[str, FileEntry]
    backends: tuple[str, ...] = ()

    def body(self) -> dict:
        """The manifest's content without its digest."""
        return {"kit_weights_manifest": MANIFEST_VERSION, "model": self.model, "revision": self.revision,
                "backends": sorted(set(self.backends)),
                "files": {name: {"size": e.size, "sha256": e.sha256} for name, e in sorted(self.files.items())}}

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of the body: the name of this exact file set."""
        canonical = json.dumps(self.body(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def total_bytes(self) -> int:
        """The sum of the file sizes."""
        return sum(e.size for e in self.files.values())

    def weight_digests(self) -> dict[str, str]:
        """sha256 of the weight files (*.safetensors, *.bin, *.gguf, *.pt), by relative name."""
        return {n: e.sha256 for n, e in sorted(self.files.items()) if n.endswith(WEIGHT_SUFFIXES)}

    def merged(self, other: "Manifest") -> "Manifest":
        """This manifest with the files and backends of `other` (same model and revision) added."""
        return Manifest(self.model, self.revision, {**self.files, **other.files},
                        tuple(sorted({*self.backends, *other.backends})))


def repo_dir_name(model_id: str) -> str:
    """The hub cache folder name of a model repo: `models--org--name`."""
    return "models--" + model_id.replace("/", "--")


def snapshot_dir(cache: Path | str, model_id: str, revision: str) -> Path:
    """`<cache>/models--org--name/snapshots/<revision>`."""
    return Path(cache) / repo_dir_name(model_id) / "snapshots" / revision


def manifest_path(cache: Path | str, model_id: str, revision: str) -> Path:
    """`<cache>/models--org--name/kit-manifests/<revision>.json`."""
    return Path(cache) / repo_dir_name(model_id) / MANIFEST_DIR / f"{revision}.json"


def manifest_beside(snapshot: Path) -> Path:
    """The manifest of a snapshot folder `.../models--org--name/snapshots/<revision>`."""
    snapshot = Path(snapshot)
    return snapshot.parent.parent / MANIFEST_DIR / f"{snapshot.name}.json"


def check_name(name: str) -> str:
    """A snapshot-relative POSIX file name, or a ValueError saying why it is not one."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "." in name.split("/") or _BAD_NAME.search(name) \
            or name.startswith("-") or name.endswith("/") or "//" in name:
        raise ValueError(f"file name {name!r} is not a plain relative path")
    return name


def manifest_text(manifest: Manifest) -> str:
    """The manifest file's text: the body plus its digest, sorted keys, indent 2, final newline."""
    return json.dumps({**manifest.body(), "digest": manifest.digest}, sort_keys=True, indent=2,
                      ensure_ascii=False) + "\n"


def parse_manifest(text: str, where: str) -> Manifest:
    """A manifest from its text; a ConfigError naming `where` and the field when it is not a sound
    one (unknown version, bad names, sizes or digests, or a digest that is not its content's)."""
    def bad(what: str) -> ConfigError:
        """The one-line error for this manifest."""
        return ConfigError(f"{where}: not a sound kit weights manifest: {what}",
                           fix="stage the model again (kit weights stage --model M) and push it (kit weights push)")

    try:
        data = safejson.loads(text)   # bounded: no nesting or number can crash the reader
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or set(data) != _KEYS:
        raise bad(f"keys {sorted(data) if isinstance(data, dict) else type(data).__name__}, expected {sorted(_KEYS)}")
    if data["kit_weights_manifest"] != MANIFEST_VERSION:
        raise bad(f"kit_weights_manifest = {data['kit_weights_manifest']!r}, this kit reads {MANIFEST_VERSION}")
    if not isinstance(data["model"], str) or not data["model"]:
        raise bad(f"model = {data['model']!r}")
    if not isinstance(data["revision"], str) or not _HEX40.match(data["revision"]):
        raise bad(f"revision = {data['revision']!r} is not a 40-hex commit")
    backends = data["backends"]
    if not isinstance(backends, list) or not all(isinstance(b, str) for b in backends):
        raise bad(f"backends = {backends!r}")
    if not isinstance(data["files"], dict) or not data["files"]:
        raise bad("files is empty or not a table")
    files = {}
    for name, entry in data["files"].items():
        try:
            check_name(name)
        except ValueError as exc:
            raise bad(f"files: {exc}") from None
        if not isinstance(entry, dict) or set(entry) != {"size", "sha256"}:
            raise bad(f"files.{name}: expected size and sha256")
        size, sha = entry["size"], entry["sha256"]
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise bad(f"files.{name}.size = {size!r}")
        if not isinstance(sha, str) or not _HEX64.match(sha):
            raise bad(f"files.{name}.sha256 = {sha!r}")
        files[name] = FileEntry(size, sha)
    manifest = Manifest(data["model"], data["revision"], files, tuple(backends))
    if data["digest"] != manifest.digest:
        raise bad(f"digest {str(data['digest'])[:16]} is not its content's ({manifest.digest[:16]}): it was edited")
    return manifest


def read_manifest(path: Path) -> Manifest | None:
    """The manifest at `path`; None when there is none; a ConfigError when it is not a sound one."""
    try:
        # a regular file of bounded size: a FIFO or device in its place must not stall the reader
        text = read_regular_file(path, "the weights manifest", MANIFEST_MAX_BYTES,
                                 fix="stage the model again (kit weights stage --model M)").decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the weights manifest ({exc})",
                          fix="check its permissions, or stage the model again") from None
    return parse_manifest(text, str(path))


def write_manifest(cache: Path | str, manifest: Manifest) -> Path:
    """Write the manifest beside its snapshot in `cache`, atomically; returns its path."""
    path = manifest_path(cache, manifest.model, manifest.revision)
    write_text_atomic(path, manifest_text(manifest))
    os.chmod(path, 0o644)
    return path


Progress = Callable[[str], None]
MANIFEST_MAX_BYTES = 64 << 20     # a manifest lists file names and digests: megabytes at most
MAX_SNAPSHOT_DEPTH = 32           # folders inside a snapshot; Hugging Face repositories nest a few


def build_manifest(snapshot: Path, model_id: str, revision: str, names: Iterable[str],
                   backends: Iterable[str] = (), progress: Progress = lambda m: None) -> Manifest:
    """Hash the named files of a snapshot (following the cache's links into blobs/) into a manifest."""
    files = {}
    for name in sorted(set(names)):
        path = Path(snapshot) / check_name(name)
        files[name] = FileEntry(path.stat().st_size, file_sha256(path))
        progress(f"hashed {name} ({files[name].size} bytes)")
    return Manifest(model_id, revision, files, tuple(backends))


def local_sizes(snapshot: Path) -> dict[str, int]:
    """Relative name -> size of every file in a snapshot folder (links followed, each folder entered
    once and at most MAX_SNAPSHOT_DEPTH deep, so links back up the tree cannot make the walk endless);
    {} when absent."""
    out: dict[str, int] = {}
    snapshot = Path(snapshot)
    seen: set[tuple[int, int]] = set()
    for root, dirs, names in os.walk(snapshot, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen or len(Path(root).relative_to(snapshot).parts) > MAX_SNAPSHOT_DEPTH:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        for name in names:
            path = Path(root) / name
            try:
                info = path.stat()
            except OSError:
                continue   # a dangling link: as missing as no file
            if stat.S_ISREG(info.st_mode):   # a FIFO or device is no file of weights (and would stall a hash)
                out[path.relative_to(snapshot).as_posix()] = info.st_size
    return out


def size_problems(manifest: Manifest, sizes: dict[str, int]) -> list[str]:
    """What stops a snapshot with these file sizes from being the manifest's: a listed file missing or
    of another size, or a file the manifest does not list that a loader may read (any but documentation,
    licences and pictures): the manifest names the exact file set a job loads."""
    problems = []
    for name, entry in sorted(manifest.files.items()):
        if name not in sizes:
            problems.append(f"{name} is missing")
        elif sizes[name] != entry.size:
            problems.append(f"{name} is {sizes[name]} bytes, the manifest says {entry.size}")
    for name in sorted(set(sizes) - set(manifest.files)):
        if name.endswith(WEIGHT_SUFFIXES):
            problems.append(f"{name} is a weight file the manifest does not list")
        elif not _read_by_no_loader(name):   # a tokenizer's or config's file changes answers as weights do
            problems.append(f"{name} is a file the manifest does not list (an engine may read it)")
    return problems


# what no engine or tokenizer loads from a snapshot: its documentation, licence and pictures
_NO_LOADER_SUFFIXES = (".md", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf")
_NO_LOADER_NAMES = frozenset({".gitattributes", "LICENSE", "LICENCE", "NOTICE", "COPYING"})


def _read_by_no_loader(name: str) -> bool:
    """Whether a snapshot file is one no loader reads (README.md, LICENSE, a picture): one a snapshot may
    hold beside the manifest's files."""
    base = name.rpartition("/")[2]
    stem = base.split(".", 1)[0]
    return base.lower().endswith(_NO_LOADER_SUFFIXES) or base in _NO_LOADER_NAMES or stem in _NO_LOADER_NAMES


def hash_problems(manifest: Manifest, digests: dict[str, str | None]) -> list[str]:
    """Listed files whose sha256 (None: unreadable or missing) is not the manifest's."""
    out = []
    for name, entry in sorted(manifest.files.items()):
        got = digests.get(name)
        if got is None:
            out.append(f"{name} is missing or unreadable")
        elif got != entry.sha256:
            out.append(f"{name}: sha256 {got[:16]}, the manifest says {entry.sha256[:16]}")
    return out


def verify_snapshot(snapshot: Path, manifest: Manifest, progress: Progress = lambda m: None) -> list[str]:
    """Hash every file the manifest lists (the full check); the problems found, empty when all match."""
    problems = size_problems(manifest, local_sizes(snapshot))
    if problems:
        return problems
    digests: dict[str, str | None] = {}
    for name in sorted(manifest.files):
        try:
            digests[name] = file_sha256(Path(snapshot) / name)
        except OSError:
            digests[name] = None
        progress(f"verified {name}")
    return hash_problems(manifest, digests)
