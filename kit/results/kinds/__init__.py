"""The results side of each benchmark kind (kit.config.kinds registers them), found from a
checkpoint's own metadata."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kit.config.kinds import DEFAULT_KIND, KINDS
from kit.results import keys
from kit.results.kinds.base import ResultKind


def kind_name(data: Mapping[str, Any] | None) -> object:
    """The kind a checkpoint says it is: metadata.benchmark_kind, or lrb (lrb's own files name none)."""
    metadata = (data or {}).get(keys.METADATA)
    return metadata.get(keys.BENCHMARK_KIND, DEFAULT_KIND) if isinstance(metadata, Mapping) else DEFAULT_KIND


def kind_of(data: Mapping[str, Any] | None) -> ResultKind | None:
    """The ResultKind of a checkpoint; None when it names a kind kit does not know."""
    name = kind_name(data)
    return KINDS[name].results_part() if isinstance(name, str) and name in KINDS else None


def unknown_kind(data: Mapping[str, Any] | None) -> str:
    """Why a checkpoint's kind is not usable, in one line naming the key and the known kinds."""
    return f"metadata.{keys.BENCHMARK_KIND} is {kind_name(data)!r}; kit knows {', '.join(sorted(KINDS))}"
