"""Containers started from kit's built images for tests, through testcontainers' DockerContainer
life cycle: started with a command that waits, exec'd into, and always stopped and removed on
leaving the `with` block, a failing test included.

Ryuk, testcontainers' reaper of leftover containers, is itself an image from a registry, and no
registry is reachable from kit's builders: it is disabled, and each container's removal is its
context manager's job."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Sequence

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.container import DockerContainer  # noqa: E402  (after the Ryuk setting it reads)


@contextmanager
def image_container(image: str, *, volumes: Sequence[tuple[str, str, str]] = (), env: dict[str, str] | None = None,
                    user: str | None = None) -> Iterator[DockerContainer]:
    """A running container of `image` that idles until the block ends ((host, path, mode) volumes)."""
    container = DockerContainer(image).with_command(["sleep", "infinity"])
    for host, path, mode in volumes:
        container = container.with_volume_mapping(host, path, mode)
    for name, value in (env or {}).items():
        container = container.with_env(name, value)
    if user:
        container = container.with_kwargs(user=user)
    with container:
        yield container


def exec_in(container: DockerContainer, argv: Sequence[str]) -> tuple[int, str]:
    """Run a command in a running container: its exit code and its output (stdout and stderr)."""
    result = container.exec(list(argv))
    return result.exit_code, result.output.decode("utf-8", "replace")


def container_exists(container_id: str) -> bool:
    """Whether Docker still knows a container (removed ones are gone)."""
    import docker

    try:
        docker.from_env().containers.get(container_id)
    except docker.errors.NotFound:
        return False
    return True
