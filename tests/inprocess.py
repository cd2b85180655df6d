"""kit run in the test's own process: what the `kit` command gives (exit code, stdout, stderr), without
an interpreter start per call."""

from __future__ import annotations

import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path


def kit_in_process(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """kit's main (its one error printer included) run in this process, in `cwd`, with `env` added to
    the environment. A traceback kit would print is raised here instead, and fails the test."""
    from kit.cli.main import main

    out, err, code = StringIO(), StringIO(), 0
    old_cwd, old_env = os.getcwd(), dict(os.environ)
    try:
        os.chdir(cwd)
        os.environ.update(env or {})
        with redirect_stdout(out), redirect_stderr(err):
            main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    return subprocess.CompletedProcess(["kit", *args], code, out.getvalue(), err.getvalue())
