"""The system description each job writes from inside its container, in the spirit of
MLPerf's systems/*.json: host, accelerator and software stack, as the job saw them."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

import kit
from kit.files import write_text_atomic
from kit.results import keys
from kit.results.store import SYSTEMS_DIR, dumps_checkpoint
from kit.worker.jobinfo import JobInfo


def _meminfo_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _os_release() -> str | None:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', text, re.M)
    return m.group(1) if m else None


def system_description(job: JobInfo, hardware: dict[str, Any], packages: dict[str, str | None],
                       image: dict[str, Any]) -> dict[str, Any]:
    """The system JSON: MLPerf-style field names, plus kit's image and job facts."""
    hw = {k: v for k, v in hardware.items() if k != "_unknown"}
    return {
        "system_name": f"{job.site or 'unknown-site'}/{job.node}",
        "number_of_nodes": 1,
        "host_processor_model_name": hw.get(keys.HW_CPU),
        "host_processor_core_count": os.cpu_count(),
        "host_memory_capacity_gib": _meminfo_gib(),
        "accelerator_model_name": hw.get(keys.HW_GPU_NAME),
        "accelerators_per_node": hw.get(keys.HW_GPU_COUNT),
        "accelerator_driver": hw.get(keys.HW_DRIVER),
        "cuda_version": hw.get(keys.HW_CUDA),
        "operating_system": _os_release(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "framework": ", ".join(f"{k} {v}" for k, v in sorted(packages.items()) if v),
        "software": dict(sorted(packages.items())),
        "kit_version": kit.__version__,
        "image": image,
        "job": {"site": job.site, "scheduler": job.scheduler, "job_id": job.job_id,
                "array_index": job.array_index, "node": job.node, "runtime": job.runtime},
        "unknown": dict(hardware.get("_unknown", {})),
    }


def write_system_description(results: Path, description: dict[str, Any]) -> Path:
    """Write RESULTS/systems/<site>-<job>-<node>.json atomically; returns its path."""
    job = description["job"]
    name = "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", str(x)) for x in
                    (job["site"] or "nosite", job["job_id"] or f"pid{os.getpid()}", job["node"]))
    path = Path(results) / SYSTEMS_DIR / f"{name}.json"
    write_text_atomic(path, dumps_checkpoint(description))
    return path
