"""A staged snapshot of a pinned revision, found offline in a hub cache, and the digests of its weight files."""

from __future__ import annotations

import os
from pathlib import Path

from kit.errors import ConfigError, MissingExtraError
from kit.results.store import file_sha256

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


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
                f"stage the weights on a machine with network: hf download {model_id} --revision {rev} "
                f"--cache-dir {where} (huggingface-cli download with older huggingface_hub), "
                "or point the site's `weights` at the cache that holds them"
            ),
        ) from None
    return Path(folder)


def weight_files_sha256(snapshot: Path) -> dict[str, str]:
    """sha256 of each weight file (*.safetensors, *.bin, *.gguf, *.pt) in a snapshot, by relative name."""
    snapshot = Path(snapshot)
    digests: dict[str, str] = {}
    # os.walk lists the files of a hub snapshot even though they are symlinks into blobs/.
    for root, _dirs, files in os.walk(snapshot):
        for name in files:
            if name.endswith(WEIGHT_SUFFIXES):
                path = Path(root) / name
                digests[path.relative_to(snapshot).as_posix()] = file_sha256(path)
    return dict(sorted(digests.items()))
