"""The results side of each benchmark kind (kit.config.kinds names them), each registered here by
its own package, and found from a checkpoint's own metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kit.config.kinds import DEFAULT_KIND, KINDS, get_kind
from kit.registry import Registry
from kit.results import keys
from kit.results.kinds.base import ResultKind, TypedCheckpoint

# kind name -> its ResultKind, in kit.results.kinds.<name> (imported when first asked for)
RESULT_KINDS: Registry = Registry("benchmark kind", "kit.results.kinds", KINDS)


def result_kind(name: object, where: str) -> ResultKind:
    """The results part of kind `name`; a ConfigError naming `where` when kit knows no such kind."""
    return RESULT_KINDS.get(get_kind(name, where).name)


def kind_name(data: Mapping[str, Any] | None) -> object:
    """The kind a checkpoint says it is: metadata.benchmark_kind, or lrb (lrb's own files name none)."""
    metadata = (data or {}).get(keys.METADATA)
    return metadata.get(keys.BENCHMARK_KIND, DEFAULT_KIND) if isinstance(metadata, Mapping) else DEFAULT_KIND


def kind_of(data: Mapping[str, Any] | None) -> ResultKind | None:
    """The ResultKind of a checkpoint; None when it names a kind kit does not know."""
    name = kind_name(data)
    return RESULT_KINDS.get(name) if isinstance(name, str) and name in KINDS else None


def unknown_kind(data: Mapping[str, Any] | None) -> str:
    """Why a checkpoint's kind is not usable, in one line naming the key and the known kinds."""
    return f"metadata.{keys.BENCHMARK_KIND} is {kind_name(data)!r}; kit knows {', '.join(sorted(KINDS))}"


def typed_read(raw: bytes) -> tuple[ResultKind, TypedCheckpoint] | None:
    """The checkpoint in these bytes as read by the typed reader of the default kind (the one lrb's own
    files are: they name none), with that kind, when it reads them (ResultKind.typed_read); else None."""
    kind = RESULT_KINDS.get(DEFAULT_KIND)
    read = kind.typed_read(raw)
    return (kind, read) if read is not None and kind_of(read.sections) is kind else None
