"""The worker side of each benchmark kind (kit.config.kinds names them): how one pair runs
through an engine. The shard loop (kit.worker.shard) does the rest for every kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit.config.kinds import KINDS, get_kind
from kit.registry import Registry

if TYPE_CHECKING:
    from kit.worker.kinds.base import PairRunner

# kind name -> its PairRunner, in kit.worker.kinds.<name> (imported when first asked for)
WORKER_KINDS: Registry = Registry("benchmark kind", "kit.worker.kinds", KINDS)


def worker_kind(name: object, where: str) -> PairRunner:
    """The worker part of kind `name`; a ConfigError naming `where` when kit knows no such kind."""
    return WORKER_KINDS.get(get_kind(name, where).name)
