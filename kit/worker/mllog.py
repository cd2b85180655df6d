"""`:::MLLOG` lines for one pair run, written with mlperf-logging's mllog to a log file
beside the checkpoint (RESULTS/<language>/<run>.mllog).

The lines go to a hidden temporary file that `commit` renames into place, so the log beside a
checkpoint is always a whole one: the worker commits it (its run_stop naming the checkpoint's
sha256) just before it writes the checkpoint. A write that fails (a full disk) raises, and so
fails the pair, instead of logging's "--- Logging error ---" report."""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path
from typing import Any

from kit.errors import MissingExtraError
from kit.results.store import keep_foreign_log

_counter = itertools.count()


class _RaisingFileHandler(logging.FileHandler):
    """A file handler whose write errors propagate to the caller."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        raise  # logging calls this inside the except clause of the failed emit


def _create_fresh(tmp: Path) -> Any:
    """A text stream on a new file at `tmp`, after removing whatever was there: O_EXCL|O_NOFOLLOW
    never opens an existing file or writes through a link planted at the name."""
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    return os.fdopen(fd, "w", encoding="utf-8")


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
        self._tmp = self.path.with_name(f".{self.path.name}.tmp")
        self._committed = False
        self._handler = _RaisingFileHandler(self._tmp, mode="w", encoding="utf-8", delay=True)
        self._handler.stream = _create_fresh(self._tmp)
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

    def commit(self) -> None:
        """Close the log and rename it into place (replacing the pair's previous log); once only."""
        if self._committed:
            return
        self._committed = True
        self._handler.flush()
        os.fsync(self._handler.stream.fileno())   # the file we created, not whatever the name holds now
        self._detach()
        keep_foreign_log(self.path)
        os.replace(self._tmp, self.path)

    def _detach(self) -> None:
        self._handler.close()
        self._logger.removeHandler(self._handler)

    def __enter__(self) -> "PairLog":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.commit()
            return
        try:   # keep the aborted run's log, unless the failure was that it cannot be written
            self.commit()
        except OSError:
            self._detach()
            self._tmp.unlink(missing_ok=True)
