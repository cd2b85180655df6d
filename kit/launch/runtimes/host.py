"""The `host` runtime: the worker runs in a Python environment on the node, no container.

Settings (sites.toml): `python` — the interpreter that has kit's worker extra installed
(default on a local site: the Python running the launcher; a remote site must set it, a path on
its nodes). Example::

    [site.workstation]
    scheduler = "local"
    runtime = "host"
    python = "/opt/kit/.venv/bin/python"
"""

from __future__ import annotations

import sys

from kit.launch.runtimes.base import Runtime, RuntimeContext, register_runtime


@register_runtime("host")
class HostRuntime(Runtime):
    """Runs `python -m kit ...` directly."""

    def worker_argv(self, ctx: RuntimeContext) -> list[str]:
        """`<python> -m kit <args>` (the site's `python` may be a wrapper script that passes its arguments
        on, so no interpreter flag goes before -m; the job runs in kit's own folder at the site)."""
        return [self.site.python or sys.executable, "-m", "kit", *ctx.kit_args]
