"""The Docker engine, through the docker SDK (imported here only, when a command needs it)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

from kit.errors import ImageError, MissingExtraError
from kit.files import atomic_writer
from kit.settings import setting_int

_CLIENT = None


def client() -> Any:
    """A docker SDK client for the local engine; an ImageError says how to start one."""
    global _CLIENT
    if _CLIENT is not None:
        return _CLIENT
    try:
        import docker
    except ImportError:
        raise MissingExtraError("kit images", "docker", "images") from None
    timeout = setting_int("KIT_DOCKER_TIMEOUT", 600)   # a bad value is bad input, not a missing engine
    try:
        c = docker.from_env(timeout=timeout)
        c.ping()
    except Exception as exc:  # the SDK raises several unrelated types for a missing engine
        raise ImageError(f"cannot reach the Docker engine ({type(exc).__name__}: {str(exc)[:120]})",
                         fix="start it: sudo scripts/dev/dockerd.sh start (or set DOCKER_HOST)") from None
    _CLIENT = c
    return c


def image_attrs(ref: str) -> dict[str, Any]:
    """`docker image inspect` of a tag or id; a missing image is an ImageError."""
    import docker.errors

    try:
        return client().api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        raise ImageError(f"image {ref} is not in the local Docker engine",
                         fix="build it first (kit images build NAME), or docker load it") from None


def has_image(ref: str) -> bool:
    """Whether the local engine has the image."""
    try:
        image_attrs(ref)
        return True
    except ImageError:
        return False


def save(ref: str, dest: Path) -> Path:
    """`docker save` an image to a tar file (the docker-archive Apptainer reads)."""
    dest = Path(dest)
    with atomic_writer(dest) as fh:   # a failed or killed save leaves no part behind
        for chunk in client().api.get_image(ref, chunk_size=1 << 20):
            fh.write(chunk)
    return dest


def export_stream(ref: str):
    """(container, iterator of tar chunks) of `docker export` of a fresh container of the image."""
    c = client().containers.create(ref, command=["/bin/true"], entrypoint=[])
    return c, c.export(chunk_size=1 << 20)


class ChunkReader:
    """A file-like reader over an iterator of byte chunks (for tarfile stream mode)."""

    def __init__(self, chunks) -> None:
        self._it = iter(chunks)
        self._chunk = b""
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        """Read up to n bytes (all when n < 0)."""
        parts = []
        want = n
        while want != 0:
            if self._pos >= len(self._chunk):
                try:
                    self._chunk, self._pos = next(self._it), 0
                except StopIteration:
                    break
                continue
            take = len(self._chunk) - self._pos if want < 0 else min(want, len(self._chunk) - self._pos)
            parts.append(self._chunk[self._pos:self._pos + take])
            self._pos += take
            if want > 0:
                want -= take
        return b"".join(parts)


def open_stream(chunks) -> tarfile.TarFile:
    """A tarfile reading a chunk iterator sequentially."""
    return tarfile.open(fileobj=ChunkReader(chunks), mode="r|")
