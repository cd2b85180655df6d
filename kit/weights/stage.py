"""`kit weights stage` as a library call: download the files a run needs at its pinned revision with
huggingface_hub's own client (`list_repo_tree`, then `snapshot_download` with exactly those files)
into a Hugging Face cache, check every file against the Hub's listing (size; sha256 of LFS files,
the git blob id of the others), and write the weights manifest beside the snapshot.

A file downloaded earlier is not fetched again (huggingface_hub keeps finished files and resumes a
dropped transfer with an HTTP Range request), so a failed stage is finished by running it again.
The token, when one is needed (gated or private models), is passed to huggingface_hub only."""

from __future__ import annotations

import glob
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import ConfigError, KitError, MissingExtraError
from kit.weights.manifest import (FileEntry, Manifest, Progress, check_name, local_sizes, manifest_path,
                                  read_manifest, snapshot_dir, write_manifest)
from kit.weights.select import files_for


@dataclass(frozen=True)
class HubFile:
    """A repo file as the Hub lists it: size, git blob id, and the LFS sha256 when it is an LFS file."""

    path: str
    size: int
    blob_id: str | None
    lfs_sha256: str | None


@dataclass
class StageResult:
    """What staging one run did."""

    model: str
    revision: str
    backend: str
    snapshot: Path
    manifest: Path
    digest: str
    files: list[str]
    bytes: int
    fetched: list[str] = field(default_factory=list)   # files not in the cache before
    seconds: float = 0.0

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"model": self.model, "revision": self.revision, "backend": self.backend,
                "snapshot": str(self.snapshot), "manifest": str(self.manifest), "manifest_sha256": self.digest,
                "files": self.files, "bytes": self.bytes, "fetched": self.fetched, "seconds": round(self.seconds, 3)}


def default_cache() -> Path:
    """The Hugging Face hub cache of this machine (HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub)."""
    import os

    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def stage(model_id: str, revision: str, backend: str, cache: Path, *, gguf_file: str | None = None,
          trust_remote_code: bool = False, token: str | None = None, endpoint: str | None = None,
          progress: Progress = lambda m: None) -> StageResult:
    """Download what `backend` needs of `model_id` at `revision` into `cache`, check it against the
    Hub's listing and write the manifest (merged with one already there for other backends)."""
    hub = _hub()
    if _offline(hub):
        raise ConfigError("HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set, and staging downloads from the Hub",
                          fix="unset HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE for `kit weights stage`")
    t0 = time.perf_counter()
    cache = Path(cache)
    _is_a_commit(hub, model_id, revision, token, endpoint)
    listing = _list_files(hub, model_id, revision, token, endpoint)
    wanted = files_for(backend, listing, model=model_id, gguf_file=gguf_file, trust_remote_code=trust_remote_code)
    snapshot = snapshot_dir(cache, model_id, revision)
    before = local_sizes(snapshot)
    size = sum(listing[n].size for n in wanted)
    progress(f"{model_id}@{revision[:12]} ({backend}): {len(wanted)} files, {size / 1e6:.1f} MB, "
             f"{sum(1 for n in wanted if n in before)} already here")
    for name in wanted:   # before any download writes through one
        _inside_the_cache(snapshot, name, model_id)
    _download(hub, model_id, revision, cache, wanted, token, endpoint)
    entries = {}
    for name in wanted:
        entries[name] = _checked(snapshot, listing[name], model_id, name in before)
    from filelock import FileLock   # a dependency of huggingface_hub

    path = manifest_path(cache, model_id, revision)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.parent / f".{revision}.lock")):
        manifest = Manifest(model_id, revision, entries, (backend,))
        try:
            old = read_manifest(path)
        except ConfigError:
            old = None   # an unsound one is replaced
        if old is not None and (old.model, old.revision) == (model_id, revision):
            sizes = local_sizes(snapshot)
            kept = {n: e for n, e in old.files.items() if sizes.get(n) == e.size}
            manifest = Manifest(model_id, revision, kept, old.backends).merged(manifest)
        write_manifest(cache, manifest)
    return StageResult(model_id, revision, backend, snapshot, path, manifest.digest, sorted(manifest.files),
                       manifest.total_bytes, [n for n in wanted if n not in before], time.perf_counter() - t0)


def _hub():
    try:
        import huggingface_hub
        import huggingface_hub.constants  # noqa: F401 - the package loads its submodules lazily
    except ImportError:
        raise MissingExtraError("kit weights stage", "huggingface_hub", "worker") from None
    return huggingface_hub


def _offline(hub) -> bool:
    check = getattr(hub.constants, "is_offline_mode", None)
    return bool(check() if callable(check) else hub.constants.HF_HUB_OFFLINE)


def _is_a_commit(hub, model_id: str, revision: str, token: str | None, endpoint: str | None) -> None:
    """A ConfigError when `revision` is not the commit the Hub resolves it to (a branch or tag that looks
    like a commit id): the snapshot would land under the commit's name, never the revision's."""
    api = hub.HfApi(endpoint=endpoint, token=token)
    try:
        sha = getattr(api.model_info(model_id, revision=revision, token=token), "sha", None)
    except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one line
        raise hub_error(exc, model_id, revision, endpoint or hub.constants.ENDPOINT) from None
    if isinstance(sha, str) and sha != revision:
        raise ConfigError(f"{model_id}: revision {revision} is not a commit: the Hub resolves it to {sha} (a branch "
                          "or tag of that name)", fix=f'pin the commit itself: revision = "{sha}" in the roster')


def _list_files(hub, model_id: str, revision: str, token: str | None, endpoint: str | None) -> dict[str, HubFile]:
    """The repo's files at `revision`, from the Hub's tree listing."""
    api = hub.HfApi(endpoint=endpoint, token=token)
    try:
        entries = list(api.list_repo_tree(model_id, revision=revision, recursive=True, token=token))
    except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one line
        raise hub_error(exc, model_id, revision, endpoint or hub.constants.ENDPOINT) from None
    out = {}
    for e in entries:
        if not hasattr(e, "blob_id"):
            continue   # a folder
        try:   # a mirror's listing is input too: no name of it is written outside the snapshot
            check_name(e.path)
        except ValueError as exc:
            raise KitError(f"{model_id}@{revision[:12]}: the Hub at {endpoint or hub.constants.ENDPOINT} lists a "
                           f"{exc}", fix="use a mirror that serves the model as the Hub does (HF_ENDPOINT)") from None
        lfs = getattr(e, "lfs", None)
        sha = (getattr(lfs, "sha256", None) or (lfs.get("sha256") if isinstance(lfs, dict) else None)) if lfs else None
        out[e.path] = HubFile(e.path, int(e.size), e.blob_id, sha)
    return out


def _download(hub, model_id: str, revision: str, cache: Path, wanted: list[str], token: str | None,
              endpoint: str | None) -> None:
    try:
        hub.snapshot_download(model_id, revision=revision, cache_dir=str(cache), token=token, endpoint=endpoint,
                              allow_patterns=[glob.escape(n) for n in wanted])
    except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one line
        raise hub_error(exc, model_id, revision, endpoint or hub.constants.ENDPOINT) from None


def _inside_the_cache(snapshot: Path, name: str, model_id: str) -> None:
    """A ConfigError when the snapshot's entry for `name` is a link that leads out of the model's folder of
    the cache (snapshots link into its blobs/): kit neither reads nor removes what it points at."""
    path = snapshot / name
    if os.path.islink(path) and not _in_the_model_s_folder(path.resolve(), snapshot):
        raise ConfigError(f"{model_id}: {path} is a link out of the cache (to {path.resolve()})",
                          fix="remove that link (what it points at is not kit's), then stage again")


def _in_the_model_s_folder(path: Path, snapshot: Path) -> bool:
    """Whether `path` (resolved) lies in the model's folder of the cache (models--org--name/, the
    snapshot's grandparent): the only place stage reads through a link or removes a file."""
    return snapshot.parent.parent.resolve() in path.parents


def _checked(snapshot: Path, hub_file: HubFile, model_id: str, was_here: bool = False) -> FileEntry:
    """The file's manifest entry after checking it against the Hub's listing; a bad file is removed
    (its link and its blob in the cache) so the next stage fetches it again. `was_here`: it was in the
    snapshot before this stage (then its fault is the cache's, not the download's)."""
    _inside_the_cache(snapshot, hub_file.path, model_id)
    path = snapshot / hub_file.path
    sha, blob = hashlib.sha256(), hashlib.sha1()
    try:
        size = path.stat().st_size
        blob.update(f"blob {size}\0".encode())
        with open(path, "rb") as fh:
            while chunk := fh.read(4 << 20):
                sha.update(chunk)
                blob.update(chunk)
    except OSError as exc:
        raise KitError(f"{model_id}: {hub_file.path} was not downloaded ({exc})",
                       fix="run the same `kit weights stage` again") from None
    problem = None
    if size != hub_file.size and not hub_file.lfs_sha256:
        problem = f"{size} bytes, the Hub lists {hub_file.size}"
    elif hub_file.lfs_sha256 and sha.hexdigest() != hub_file.lfs_sha256:
        problem = f"sha256 {sha.hexdigest()[:16]}, the Hub lists {hub_file.lfs_sha256[:16]}"
    elif not hub_file.lfs_sha256 and hub_file.blob_id and blob.hexdigest() != hub_file.blob_id:
        problem = f"git blob id {blob.hexdigest()[:16]}, the Hub lists {hub_file.blob_id[:16]}"
    if problem:
        _remove(path, snapshot)
        if was_here:
            raise KitError(f"{model_id}: {hub_file.path}, already in the cache, does not match the Hub: {problem}; "
                           "it was damaged there (removed)", fix="run the same `kit weights stage` again to fetch it")
        raise KitError(f"{model_id}: downloaded {hub_file.path} does not match the Hub: {problem} (removed)",
                       fix="run the same `kit weights stage` again; if it persists, the mirror at HF_ENDPOINT "
                           "serves other bytes than it lists")
    return FileEntry(size, sha.hexdigest())


def _remove(path: Path, snapshot: Path) -> None:
    """Remove a snapshot file: its link, and the blob it points at when that is in the model's folder."""
    target = path.resolve()
    path.unlink(missing_ok=True)
    if target != path and _in_the_model_s_folder(target, snapshot):
        target.unlink(missing_ok=True)


def hub_error(exc: Exception, model_id: str, revision: str, endpoint: str) -> KitError:
    """One kit error line for a huggingface_hub failure (no token and no traceback in it)."""
    from huggingface_hub import errors

    name = type(exc).__name__
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else name
    if isinstance(exc, errors.GatedRepoError) or (
            isinstance(exc, errors.HfHubHTTPError) and getattr(exc.response, "status_code", None) in (401, 403)):
        return ConfigError(f"model {model_id} is gated or private at {endpoint}, and the token given cannot read it "
                           f"({first})", fix="accept the model's terms on the Hub, write a token that can read it to "
                                             "a mode-600 file and pass --token-file FILE (or --site S with hf_token_file)")
    if isinstance(exc, errors.RevisionNotFoundError):
        return ConfigError(f"model {model_id} has no revision {revision} at {endpoint}",
                           fix="check the roster's revision (the full 40-hex commit of the model repo)")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return ConfigError(f"model {model_id} is not found at {endpoint}",
                           fix="check the model id in the roster (or pass --token-file for a private repo)")
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return ConfigError("huggingface_hub is in offline mode (HF_HUB_OFFLINE)",
                           fix="unset HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE for `kit weights stage`")
    if isinstance(exc, errors.HfHubHTTPError):
        return KitError(f"the Hub at {endpoint} failed while staging {model_id}: {first}",
                        fix="run the same `kit weights stage` again: files already downloaded are kept")
    module = type(exc).__module__.split(".")[0]
    if module in ("httpx", "httpx2", "requests", "urllib3") or isinstance(exc, (ConnectionError, TimeoutError)):
        return KitError(f"cannot reach the Hub at {endpoint} ({name}: {first})",
                        fix="check the network (or HF_ENDPOINT), then run the same `kit weights stage` again")
    if isinstance(exc, (OSError, errors.LocalEntryNotFoundError)):
        return KitError(f"staging {model_id} failed: {name}: {first}",
                        fix="run the same `kit weights stage` again: files already downloaded are kept")
    raise exc
