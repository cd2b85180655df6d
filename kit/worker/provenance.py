"""The provenance block of a checkpoint: facts only; an unknowable fact is null and
`provenance.unknown` says why."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kit
from kit.worker import jobinfo


class Facts:
    """Collects provenance values and the reason for each one that is unknown."""

    def __init__(self) -> None:
        self.unknown: dict[str, str] = {}

    def value(self, key: str, value: Any, reason: str) -> Any:
        """Return `value`, or None with `reason` recorded under `key` when it is empty."""
        if value is None or value == "":
            self.unknown[key] = reason
            return None
        return value


def kit_commit() -> tuple[str | None, str]:
    """The kit source commit: KIT_COMMIT (set in images), else git in the source tree."""
    env = os.environ.get(jobinfo.KIT_COMMIT)
    if env:
        return env, ""
    baked = Path(kit.__file__).with_name("_commit.txt")
    if baked.is_file():
        text = baked.read_text().strip()
        if text:
            return text, ""
    return _git_describe(str(Path(kit.__file__).resolve().parent.parent))


@functools.lru_cache(maxsize=None)
def _git_describe(src: str) -> tuple[str | None, str]:
    # once per process: a job describes the source it started from, not once per pair
    if shutil.which("git") and (Path(src) / ".git").exists():
        try:
            out = subprocess.run(
                ["git", "-C", src, "describe", "--always", "--dirty", "--abbrev=40"],
                capture_output=True, text=True, timeout=10, check=True,
            ).stdout.strip()
            return out or None, "git describe printed nothing"
        except (subprocess.SubprocessError, OSError) as exc:
            return None, f"git failed: {exc}"
    return None, "not a git checkout and no KIT_COMMIT or kit/_commit.txt"


def cpu_model() -> str | None:
    """The CPU model name from /proc/cpuinfo, or platform.processor()."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def hardware(facts: Facts) -> dict[str, Any]:
    """GPU name, count, driver and CUDA version as torch and nvidia-smi see them; CPU model."""
    gpu_name = gpu_count = driver = cuda = None
    reason = "torch is not installed"
    try:
        import torch

        cuda = torch.version.cuda
        if torch.cuda.is_available():
            gpu_count = torch.cuda.device_count()
            gpu_name = torch.cuda.get_device_name(0)
        else:
            reason = "no CUDA device visible to torch"
            gpu_count = 0
    except ImportError:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20, check=True,
            ).stdout.split()
            driver = out[0] if out else None
        except (subprocess.SubprocessError, OSError):
            driver = None
    return {
        "gpu_name": facts.value("hardware.gpu_name", gpu_name, reason),
        "gpu_count": gpu_count if gpu_count is not None else facts.value("hardware.gpu_count", None, reason),
        "driver": facts.value("hardware.driver", driver, "nvidia-smi not found or failed"),
        "cuda": facts.value("hardware.cuda", cuda, "torch is a CPU build or not installed"),
        "cpu": facts.value("hardware.cpu", cpu_model(), "CPU model not readable"),
    }


def image(facts: Facts, backend: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The image the job ran in, as passed by the launcher (KIT_IMAGE_*)."""
    env = dict(os.environ if env is None else env)
    runtime = env.get(jobinfo.KIT_RUNTIME) or "host"
    why = f"runtime {runtime!r}: the launcher passed no image" if runtime != "host" else "host runtime: no image"
    return {
        "backend": backend,
        "digest": facts.value("image.digest", env.get(jobinfo.KIT_IMAGE_DIGEST), why),
        "artifact": facts.value("image.artifact", env.get(jobinfo.KIT_IMAGE_ARTIFACT), why),
        "artifact_sha256": facts.value("image.artifact_sha256", env.get(jobinfo.KIT_IMAGE_SHA256), why),
        "lock_sha256": facts.value("image.lock_sha256", env.get(jobinfo.KIT_LOCK_SHA256), why),
    }


def build_provenance(
    *,
    backend: str,
    model_id: str,
    revision: str | None,
    weight_files_sha256: dict[str, str],
    manifest_sha256: str,
    file_sha256: str,
    prompt_sha256: str,
    shard: str | None,
    packages: dict[str, str | None],
    job: jobinfo.JobInfo,
    hardware_facts: dict[str, Any] | None = None,
    unknown_extra: dict[str, str] | None = None,
    weights_manifest_sha256: str | None = None,
) -> dict[str, Any]:
    """Assemble the provenance block (DESIGN section 5)."""
    facts = Facts()
    commit, why = kit_commit()
    hw = hardware_facts if hardware_facts is not None else hardware(facts)
    if hardware_facts is not None:
        facts.unknown.update(hardware_facts.get("_unknown", {}))
        hw = {k: v for k, v in hw.items() if k != "_unknown"}
    block = {
        "kit_version": kit.__version__,
        "kit_commit": facts.value("kit_commit", commit, why),
        "image": image(facts, backend),
        "model": {
            "id": model_id,
            "revision": facts.value("model.revision", revision, "run with --allow-unpinned"),
            "weight_files_sha256": weight_files_sha256,
            "weights_manifest_sha256": facts.value(
                "model.weights_manifest_sha256", weights_manifest_sha256,
                "no kit weights manifest beside the snapshot: every weight file was hashed at load"),
        },
        "data": {"manifest_sha256": manifest_sha256, "file_sha256": file_sha256, "prompt_sha256": prompt_sha256},
        "job": {
            "site": facts.value("job.site", job.site, "not launched through a site (KIT_SITE unset)"),
            "scheduler": facts.value("job.scheduler", job.scheduler, "no scheduler variables in the environment"),
            "job_id": facts.value("job.job_id", job.job_id, "no scheduler job id in the environment"),
            "array_index": facts.value("job.array_index", job.array_index, "not an array job"),
            "shard": shard,
            "node": job.node,
            "runtime": job.runtime or "host",
        },
        "hardware": hw,
        "packages": {k: facts.value(f"packages.{k}", v, "not installed") for k, v in sorted(packages.items())},
    }
    facts.unknown.update(unknown_extra or {})
    block["unknown"] = dict(sorted(facts.unknown.items()))
    return block


def hardware_snapshot() -> dict[str, Any]:
    """Hardware facts gathered once per process (with their unknown reasons under _unknown)."""
    facts = Facts()
    hw = hardware(facts)
    hw["_unknown"] = facts.unknown
    return hw
