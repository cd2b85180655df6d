"""Probe a results folder before spending hours on a model: can this process write a file there?"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from kit.errors import ConfigError
from kit.files import not_a_folder, what_stands

PROBE_BYTES = 64 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def check_writable(folder: Path) -> None:
    """Create `folder` if needed and write, fsync and remove a small hidden file in it; a read-only,
    unwritable or full folder is a ConfigError naming the folder, the reason and the fix."""
    folder = Path(folder)
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kit-probe-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\0" * PROBE_BYTES)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        blocked = not_a_folder(folder)
        if blocked is not None and exc.errno in (errno.EEXIST, errno.ENOTDIR):
            raise ConfigError(f"cannot write to the results folder {folder}: {blocked} is {what_stands(blocked)}, "
                              "not a folder", fix="point --results (the site's `results`) at a folder, or move what "
                                                  "stands there") from None
        if exc.errno in _FULL:
            fix = f"free space (or quota) on the file system of {folder}, or point --results (the site's `results`) elsewhere"
        else:
            fix = f"make {folder} writable by this user, or point --results (the site's `results`) elsewhere"
        raise ConfigError(f"cannot write to the results folder {folder}: {reason}", fix=fix) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
