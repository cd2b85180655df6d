"""containers/images.lock.json: the record of built images, by digest, and their artifacts.

Written by `kit images build` / `kit images convert`; read by the launcher (which image
and artifact a job runs, passed to the job as KIT_IMAGE_*), `kit check` and `kit reproduce`."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator, model_validator

from kit import safejson
from kit.errors import ConfigError, ImageError
from kit.files import name_part, read_regular_file
from kit.gpus import GpuArchs, parse_arch_flags
from kit.files import write_text_atomic

LOCK_VERSION = 1
DEFAULT_LOCK = Path("containers") / "images.lock.json"
GPU_ARCHS_LABEL = "org.kit.gpu-archs"   # a CUDA image's record of the GPU code it carries (sm_NN / compute_NN)


class Artifact(BaseModel):
    """A converted artifact (SIF or sqsh): its file name and sha256."""

    model_config = ConfigDict(extra="forbid")

    file: str
    sha256: str

    @field_validator("file")
    @classmethod
    def _one_name(cls, v: str) -> str:
        # a name in the artifacts folder (--out): every reader joins it there, none follows it elsewhere
        try:
            return name_part(v, "artifact file name")
        except ConfigError as exc:
            raise ValueError(exc.message) from None
    bytes: int | None = None
    made_at: str | None = None
    image_id: str | None = Field(None, description="the image it was converted from")
    tool: str | None = Field(None, description="what made it, with versions")


class BuiltImage(BaseModel):
    """One built backend image."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    tag: str
    image_id: str = Field(description="sha256:... of the image config (docker image id)")
    repo_digest: str | None = None
    dockerfile_sha256: str
    lock_sha256: str
    build_args: dict[str, str] = Field(default_factory=dict)
    base: str
    kit_version: str
    kit_commit: str | None = None
    built_at: str
    artifacts: dict[str, Artifact] = Field(default_factory=dict)   # "sif" | "sqsh" | "tar" (docker archive)
    variant: str | None = None
    python: str | None = None
    cuda: str | None = None
    gpu_archs: str | None = Field(None, description="the GPU code a CUDA image carries, as compiler flags: sm_NN "
                                  "(machine code), compute_NN (PTX); kit.gpus reads which GPUs run it")
    base_image_id: str | None = Field(None, description="local id of the base (for unpinned local bases)")
    build_locks_sha256: dict[str, str] = Field(default_factory=dict)
    offline: bool = Field(False, description="built from a wheelhouse with no network")
    ca_bundle: bool = Field(False, description="pip got a CA bundle in the build stage (absent from the image)")
    size_bytes: int | None = None

    def gpu_code(self) -> GpuArchs | None:
        """The GPU code it records (None: a CPU image, or one built before kit recorded it)."""
        return parse_arch_flags(self.gpu_archs) if self.gpu_archs else None

    def artifact(self, kind: str) -> Artifact:
        """The sif or sqsh artifact, or an ImageError saying how to make it."""
        if kind not in self.artifacts:
            raise ImageError(f"image {self.backend} ({self.image_id[:19]}) has no {kind} artifact",
                             fix=f"kit images convert {self.backend} --to {kind}")
        return self.artifacts[kind]


class ImagesLock(BaseModel):
    """The whole lock of built images."""

    model_config = ConfigDict(extra="forbid")

    kit_images_lock_version: StrictInt = LOCK_VERSION
    images: dict[str, BuiltImage] = Field(default_factory=dict)

    @field_validator("kit_images_lock_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != LOCK_VERSION:
            raise ValueError(f"version {v} is not {LOCK_VERSION}, the one this kit reads")
        return v

    @model_validator(mode="after")
    def _keys_name_their_backend(self) -> "ImagesLock":
        for key, image in self.images.items():
            if image.backend != key:
                raise ValueError(f"the image under {key!r} records backend {image.backend!r}")
        return self

    def get(self, backend: str, where: Path | None = None) -> BuiltImage:
        """The built image of a backend, or an ImageError naming the make target."""
        if backend not in self.images:
            raise ImageError(f"no built image for backend {backend!r}" + (f" in {where}" if where else ""),
                             fix=f"build it: make image-{backend} (or kit images build {backend})")
        return self.images[backend]


LOCK_LIMIT_BYTES = 16 << 20   # a lock names a few images; a bound on what a bad path can cost


_DAMAGED_FIX = ("restore the images lock kit wrote (a copy, or the one beside the artifacts at the site), or move "
                "it aside and rebuild the images (make images)")


def load_lock(path: Path = DEFAULT_LOCK) -> ImagesLock:
    """Read the lock of built images: empty when no file is there yet (nothing built), a ConfigError when
    the path cannot be one (a broken link, or a path given in a folder that does not exist: a typo, not an
    empty lock; the default's folder, containers/, is missing outside the repository, where nothing was
    built)."""
    path = Path(path)
    if not path.exists():
        if path.is_symlink() or (path != DEFAULT_LOCK and not path.parent.is_dir()):
            why = "a broken link" if path.is_symlink() else "its folder does not exist"
            raise ConfigError(f"{path}: images lock not found ({why})",
                              fix="pass the images lock kit wrote (--lock-file or --images-lock, KIT_IMAGES_LOCK; "
                                  "containers/images.lock.json by default)")
        return ImagesLock()
    try:
        text = read_regular_file(path, "an images lock", LOCK_LIMIT_BYTES,
                                 fix="pass the images lock kit wrote (images.lock.json)").decode("utf-8")
        return ImagesLock.model_validate(safejson.loads_unique(text))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{path}: not a valid images lock ({where}: {message})", fix=_DAMAGED_FIX) from None
    except ValueError as exc:   # UnicodeDecodeError is one too
        raise ConfigError(f"{path}: not a valid images lock ({str(exc).splitlines()[0]})", fix=_DAMAGED_FIX) from None


@contextmanager
def host_lock(name: str, what: str, say: Callable[[str], None] = lambda msg: None) -> Iterator[None]:
    """Hold a lock named `name` that every kit process on this host shares, waiting as long as it takes
    for the holder (a second `kit images build` of one image waits for the first, then finds Docker's
    layer cache warm); `say` hears once that it waits, naming `what`."""
    from filelock import FileLock, Timeout

    key = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    lock = FileLock(str(Path(tempfile.gettempdir()) / f"kit-{key}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"waiting for another {what} on this host to finish")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def update_lock(path: Path, change: Callable[[ImagesLock], None]) -> ImagesLock:
    """Read, change and write the lock under an exclusive file lock (parallel builds)."""
    from filelock import FileLock

    key = hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]
    with FileLock(str(Path(tempfile.gettempdir()) / f"kit-images-lock-{key}.lock"), timeout=600):
        lock = load_lock(path)
        change(lock)
        save_lock(lock, path)
    return lock


def save_lock(lock: ImagesLock, path: Path = DEFAULT_LOCK) -> None:
    """Write the lock atomically, sorted, with a final newline."""
    data: dict[str, Any] = lock.model_dump(mode="json")
    write_text_atomic(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n")
