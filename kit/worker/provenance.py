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
from kit.config.engine_env import engine_environment
from kit.results import keys as k
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

    def at(self, section: str, key: str, value: Any, reason: str) -> Any:
        """`value` of provenance[section][key], its reason recorded as "section.key" when it is empty."""
        return self.value(f"{section}.{key}", value, reason)


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
    hw = k.PROV_HARDWARE
    return {
        k.HW_GPU_NAME: facts.at(hw, k.HW_GPU_NAME, gpu_name, reason),
        k.HW_GPU_COUNT: gpu_count if gpu_count is not None else facts.at(hw, k.HW_GPU_COUNT, None, reason),
        k.HW_DRIVER: facts.at(hw, k.HW_DRIVER, driver, "nvidia-smi not found or failed"),
        k.HW_CUDA: facts.at(hw, k.HW_CUDA, cuda, "torch is a CPU build or not installed"),
        k.HW_CPU: facts.at(hw, k.HW_CPU, cpu_model(), "CPU model not readable"),
    }


def image(facts: Facts, backend: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The image the job ran in, as passed by the launcher (KIT_IMAGE_*)."""
    env = dict(os.environ if env is None else env)
    runtime = env.get(jobinfo.KIT_RUNTIME) or "host"
    why = f"runtime {runtime!r}: the launcher passed no image" if runtime != "host" else "host runtime: no image"
    img = k.PROV_IMAGE
    return {
        k.IMAGE_BACKEND: backend,
        k.IMAGE_DIGEST: facts.at(img, k.IMAGE_DIGEST, env.get(jobinfo.KIT_IMAGE_DIGEST), why),
        k.IMAGE_ARTIFACT: facts.at(img, k.IMAGE_ARTIFACT, env.get(jobinfo.KIT_IMAGE_ARTIFACT), why),
        k.IMAGE_ARTIFACT_SHA256: facts.at(img, k.IMAGE_ARTIFACT_SHA256, env.get(jobinfo.KIT_IMAGE_SHA256), why),
        k.IMAGE_LOCK_SHA256: facts.at(img, k.IMAGE_LOCK_SHA256, env.get(jobinfo.KIT_LOCK_SHA256), why),
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
    weights_hashed: bool = True,
) -> dict[str, Any]:
    """Assemble the provenance block (docs/checkpoint-format.md; its keys: kit.results.keys)."""
    facts = Facts()
    commit, why = kit_commit()
    hw = hardware_facts if hardware_facts is not None else hardware(facts)
    if hardware_facts is not None:
        facts.unknown.update(hardware_facts.get("_unknown", {}))
        hw = {name: v for name, v in hw.items() if name != "_unknown"}
    block = {
        k.PROV_KIT_VERSION: kit.__version__,
        k.PROV_KIT_COMMIT: facts.value(k.PROV_KIT_COMMIT, commit, why),
        k.PROV_IMAGE: image(facts, backend),
        k.PROV_MODEL: {
            k.PROV_MODEL_ID: model_id,
            k.PROV_MODEL_REVISION: facts.at(k.PROV_MODEL, k.PROV_MODEL_REVISION, revision, "run with --allow-unpinned"),
            k.WEIGHT_FILES_SHA256: weight_files_sha256,
            k.WEIGHTS_MANIFEST_SHA256: facts.at(
                k.PROV_MODEL, k.WEIGHTS_MANIFEST_SHA256, weights_manifest_sha256,
                "no kit weights manifest beside the snapshot: every weight file was hashed at load"),
            k.WEIGHTS_CHECKED: k.WEIGHTS_HASHED if weights_hashed else k.WEIGHTS_SIZES,
        },
        k.PROV_DATA: {k.DATA_MANIFEST_SHA256: manifest_sha256, k.DATA_FILE_SHA256: file_sha256,
                      k.DATA_PROMPT_SHA256: prompt_sha256},
        k.PROV_JOB: {
            k.JOB_SITE: facts.at(k.PROV_JOB, k.JOB_SITE, job.site, "not launched through a site (KIT_SITE unset)"),
            k.JOB_SCHEDULER: facts.at(k.PROV_JOB, k.JOB_SCHEDULER, job.scheduler,
                                      "no scheduler variables in the environment"),
            k.JOB_ID: facts.at(k.PROV_JOB, k.JOB_ID, job.job_id, "no scheduler job id in the environment"),
            k.JOB_ARRAY_INDEX: facts.at(k.PROV_JOB, k.JOB_ARRAY_INDEX, job.array_index, "not an array job"),
            k.JOB_SHARD: shard,
            k.JOB_NODE: job.node,
            k.JOB_RUNTIME: job.runtime or "host",
        },
        k.PROV_HARDWARE: hw,
        k.PROV_PACKAGES: {name: facts.at(k.PROV_PACKAGES, name, version, "not installed")
                          for name, version in sorted(packages.items())},
        k.PROV_ENGINE_ENV: engine_environment(),
    }
    facts.unknown.update(unknown_extra or {})
    block[k.PROV_UNKNOWN] = dict(sorted(facts.unknown.items()))
    return block



def hardware_snapshot() -> dict[str, Any]:
    """Hardware facts gathered once per process (with their unknown reasons under _unknown)."""
    facts = Facts()
    hw = hardware(facts)
    hw["_unknown"] = facts.unknown
    return hw
