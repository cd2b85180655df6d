"""Claims: while a kit process computes a pair it holds the pair's claim file,
RESULTS/<language>/.<run>.claim, with an exclusive flock (filelock), so a second `kit shard` on the
same pairs (a job submitted twice, two sites sharing a results folder) skips the pair instead of
computing it again.

The kernel drops a flock when its process dies, so a claim file a killed job left behind never
blocks anyone; the empty file itself stays (filelock keeps it so that waiters share one inode)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kit.errors import CheckpointError

Signature = tuple[int, int, int] | None
RUNNING_ELSEWHERE = "another kit process is running it"


def claim_path(checkpoint: Path) -> Path:
    """The claim file of a pair: hidden, beside its checkpoint."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f".{checkpoint.stem}.claim")


def signature(checkpoint: Path) -> Signature:
    """What identifies the checkpoint file now (inode, size, mtime), or None when there is none."""
    try:
        st = os.stat(checkpoint)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _lock(checkpoint: Path):
    from filelock import FileLock

    return FileLock(str(claim_path(checkpoint)))


@contextmanager
def claim(checkpoint: Path, planned: Signature) -> Iterator[str | None]:
    """Hold the pair's claim for the block. Yields None when this process has the pair, else why
    another process has it: it holds the claim, or it wrote the checkpoint since this process
    found it as `planned` (the signature taken when the pair was planned)."""
    from filelock import Timeout

    Path(checkpoint).parent.mkdir(parents=True, exist_ok=True)
    lock = _lock(checkpoint)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        yield RUNNING_ELSEWHERE
        return
    except OSError as exc:   # a link planted at the claim's name (never followed), a folder, no permission
        raise CheckpointError(f"{claim_path(checkpoint)}: the pair's claim file cannot be opened ({exc.strerror})",
                              fix="remove it (kit makes a new one); a claim file is a plain empty file, never a link") \
            from None
    try:
        if signature(checkpoint) != planned:
            yield "another kit process wrote its checkpoint after this one planned it"
        else:
            yield None
    finally:
        lock.release()


def held_elsewhere(checkpoint: Path) -> bool:
    """True when another process holds the pair's claim right now (a claim file that cannot be
    opened counts as free: the pair's own run then fails with the reason)."""
    from filelock import Timeout

    if not claim_path(checkpoint).exists():
        return False
    lock = _lock(checkpoint)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False
