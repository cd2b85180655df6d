"""A staged snapshot of a pinned revision, found offline in a hub cache, and the digests of its weight
files: from its weights manifest after a size check (kit.weights.manifest), or by hashing them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import ConfigError, MissingExtraError
from kit.files import file_sha256
from kit.weights.manifest import WEIGHT_SUFFIXES, local_sizes, manifest_beside, read_manifest, size_problems


def resolve_snapshot(model_id: str, revision: str | None, cache_dir: Path | None) -> Path:
    """The local snapshot folder of `model_id` at `revision` (None: refs/main) in a hub cache, offline.

    `model_id` is the Hub id without any @variant; `cache_dir` None means the default
    hub cache (HF_HUB_CACHE). A snapshot that is not staged is a ConfigError.
    """
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError
    except ImportError:
        raise MissingExtraError("resolving model weights", "huggingface_hub", "worker") from None
    where = str(cache_dir) if cache_dir is not None else constants.HF_HUB_CACHE
    try:
        folder = snapshot_download(
            model_id, revision=revision, cache_dir=cache_dir, local_files_only=True,
        )
    except (LocalEntryNotFoundError, HFValidationError) as exc:
        rev = revision or "main"
        raise ConfigError(
            f"model {model_id!r} at revision {rev} is not staged in the weight cache {where} ({type(exc).__name__})",
            fix=(
                f"stage the weights on a machine with network: kit weights stage --model {model_id} "
                f"--cache {where} (or kit weights push --site SITE after staging them elsewhere), "
                "or point the site's `weights` at the cache that holds them"
            ),
        ) from None
    return Path(folder)


def weight_files_sha256(snapshot: Path) -> dict[str, str]:
    """sha256 of each weight file (*.safetensors, *.bin, *.gguf, *.pt; regular files, links to them
    followed) in a snapshot, by relative name."""
    snapshot = Path(snapshot)
    digests: dict[str, str] = {}
    # os.walk lists the files of a hub snapshot even though they are symlinks into blobs/.
    for root, _dirs, files in os.walk(snapshot):
        for name in files:
            path = Path(root) / name
            if name.endswith(WEIGHT_SUFFIXES) and path.is_file():   # a FIFO or device would stall the hash
                digests[path.relative_to(snapshot).as_posix()] = file_sha256(path)
    return dict(sorted(digests.items()))


@dataclass(frozen=True)
class LoadDigests:
    """The weight digests a job records, and how it got them."""

    files: dict[str, str]
    manifest_sha256: str | None = None
    note: str = field(default="", compare=False)
    hashed: bool = True   # every weight file hashed now; False: sizes checked, the manifest's digests taken


def digests_at_load(snapshot: Path, model_id: str, revision: str | None) -> LoadDigests:
    """The weight files' sha256 for a job's provenance: from the manifest beside the snapshot after a
    size check (the manifest's own digest is checked as it is read), or, without a manifest, by
    hashing every weight file. A manifest the snapshot does not match is a ConfigError."""
    path = manifest_beside(snapshot)
    manifest = read_manifest(path) if revision else None
    if manifest is None:
        return LoadDigests(weight_files_sha256(snapshot), None, "no weights manifest: every weight file hashed")
    if (manifest.model, manifest.revision) != (model_id, revision):
        raise ConfigError(f"{path}: the manifest is for {manifest.model}@{manifest.revision[:12]}, "
                          f"not {model_id}@{str(revision)[:12]}",
                          fix=f"stage the model again: kit weights stage --model {model_id}")
    problems = size_problems(manifest, local_sizes(snapshot))
    if problems:
        raise ConfigError(f"weights in {snapshot} do not match their manifest {path}: {'; '.join(problems[:5])}",
                          fix="run `kit weights verify`, then stage and push the model again")
    return LoadDigests(manifest.weight_digests(), manifest.digest,
                       f"manifest {manifest.digest[:12]}: {len(manifest.files)} file sizes checked", hashed=False)
