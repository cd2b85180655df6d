"""The `local` scheduler: runs each array task of a job script here, one after the other.

For workstations, CI and `kit demo`. The job runs in a clean environment (like `env -i`)
holding only the allow-listed variables; its output goes to the console and to
`<root>/logs/<job id>.out`. Example::

    [site.local]
    scheduler = "local"
    runtime = "host"
    results = "results"
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from kit.launch.request import JobRequest
from kit.launch.schedulers.base import Scheduler, Submission, register_scheduler


@register_scheduler("local")
class LocalScheduler(Scheduler):
    """Synchronous execution with bash; array index in KIT_ARRAY_INDEX (0-based)."""

    def submit_argv(self, request: JobRequest, script: Path, log_dir: str) -> list[str]:
        """`bash SCRIPT` (run once per array task with KIT_ARRAY_INDEX set)."""
        return ["bash", str(script)]

    def submit(self, request: JobRequest, script: Path, log_dir: str, env: dict[str, str]) -> Submission:
        """Run every array task now; job ids are local-<time>-<pid>_<index>."""
        base = f"local-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}"
        ids, codes = [], {}
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        for index in range(request.array_size):
            job_id = f"{base}_{index}" if request.array_size > 1 else base
            task_env = {**env, "KIT_ARRAY_INDEX": str(index), "KIT_JOB_ID": job_id}
            log = Path(log_dir) / f"{job_id}.out"
            with open(log, "w", encoding="utf-8") as fh:
                proc = subprocess.Popen(
                    self.submit_argv(request, script, log_dir), env=task_env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True, bufsize=1,
                )
                assert proc.stdout is not None
                for line in proc.stdout:
                    fh.write(line)
                    sys.stderr.write(line)
                codes[job_id] = proc.wait()
            ids.append(job_id)
        return Submission(self.site.name, ids, self.submit_argv(request, script, log_dir), script, exit_codes=codes)
