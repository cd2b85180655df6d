"""`:::MLLOG` lines for one pair run, written with mlperf-logging's mllog to a log file
beside the checkpoint (RESULTS/<language>/<run>.mllog)."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

from kit.errors import MissingExtraError

_counter = itertools.count()


class PairLog:
    """An mllog logger bound to one pair's log file; use as a context manager."""

    def __init__(self, path: Path) -> None:
        try:
            from mlperf_logging.mllog import constants
            from mlperf_logging.mllog.mllog import MLLogger
        except ImportError:
            raise MissingExtraError("the worker's MLPerf log", "mlperf_logging", "worker") from None
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_symlink():   # the log replaces the link; it never writes through it
            self.path.unlink()
        self._logger = logging.getLogger(f"kit.mllog.{next(_counter)}")
        self._logger.setLevel(logging.INFO)
        self._logger.propagate = False
        # mode "w": a rerun of the pair replaces its log together with its checkpoint.
        self._handler = logging.FileHandler(self.path, mode="w", encoding="utf-8")
        self._logger.addHandler(self._handler)
        self.ml = MLLogger(logger=self._logger, default_namespace="", default_stack_offset=1,
                                 root_dir=str(Path(__file__).resolve().parents[2]))
        self.constants = constants

    def event(self, key: str, value: Any = None, metadata: dict | None = None) -> None:
        """A POINT_IN_TIME line."""
        self.ml.event(key=key, value=value, metadata=metadata, stack_offset=1)

    def start(self, key: str, metadata: dict | None = None) -> None:
        """An INTERVAL_START line."""
        self.ml.start(key=key, metadata=metadata, stack_offset=1)

    def end(self, key: str, metadata: dict | None = None) -> None:
        """An INTERVAL_END line."""
        self.ml.end(key=key, metadata=metadata, stack_offset=1)

    def close(self) -> None:
        """Flush and detach the file handler."""
        self._handler.flush()
        self._handler.close()
        self._logger.removeHandler(self._handler)

    def __enter__(self) -> "PairLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
