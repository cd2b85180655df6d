"""`make locks`: every lock file of every image, compiled with hashes by `uv pip compile`.

Each lock `X.lock` is compiled from `X.in` beside it. A runtime lock (an image's `lock`) also
takes kit's own dependencies from pyproject.toml with the image's extra (`kit_extra`: `worker`,
or the engine's, e.g. `gliner2`), so kit can be installed in the image with --no-deps. Locks are compiled for the image's Python on
x86_64 manylinux_2_28 (glibc 2.28+: Debian 12, Ubuntu 22.04/24.04) without installing anything.
An existing lock's pins are kept unless `upgrade` is set, so regeneration is stable. A lock whose
compile_args are ["{prebuilt}"] pins a wheel built on this machine and is written by the script
that prepares it (gguf's CPU wheel: scripts/images/gguf-cpu-wheel.sh), never compiled here."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kit.errors import ConfigError, ImageError, MissingExtraError
from kit.images.spec import Target, all_targets, known_images_fix

PLATFORM = "x86_64-manylinux_2_28"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
COMPILE_COMMAND = "make locks"
PREBUILT = "{prebuilt}"


@dataclass(frozen=True)
class LockJob:
    """One lock to compile: its path and the uv command line (run from the repository root)."""

    lock: str
    argv: tuple[str, ...]


def uv_command() -> list[str]:
    """How to run uv: the `uv` on PATH, else the uv Python package of this interpreter."""
    if shutil.which("uv"):
        return ["uv"]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    raise MissingExtraError("make locks", "uv", "images")


def expand(args: list[str], env: dict[str, str]) -> list[str]:
    """Expand the {torch_cpu} and {cuda_wheels} placeholders of compile_args into index or find-links options.

    {torch_cpu}: --find-links $KIT_TORCH_CPU_FIND_LINKS, else --extra-index-url $KIT_TORCH_CPU_INDEX
    (default the PyTorch CPU index). {cuda_wheels}: the CUDA torch and NVIDIA's nvidia-* wheels
    (runtime libraries, nvcc, headers) are on PyPI, so nothing unless $KIT_CUDA_FIND_LINKS (a folder)
    or $KIT_CUDA_INDEX (index URLs, space separated: a local mirror of those wheels) is set."""
    out: list[str] = []
    for arg in args:
        if arg == "{torch_cpu}":
            links = env.get("KIT_TORCH_CPU_FIND_LINKS", "")
            if links:
                out += ["--find-links", links]
            else:
                out += ["--extra-index-url", env.get("KIT_TORCH_CPU_INDEX") or TORCH_CPU_INDEX,
                        "--index-strategy", "unsafe-best-match"]
        elif arg == "{cuda_wheels}":
            links, indexes = env.get("KIT_CUDA_FIND_LINKS", ""), env.get("KIT_CUDA_INDEX", "").split()
            out += ["--find-links", links] if links else []
            out += [a for url in indexes for a in ("--extra-index-url", url)]
            out += ["--index-strategy", "unsafe-best-match"] if links or indexes else []
        else:
            out.append(arg)
    return out


def job_for(t: Target, lock: str, *, upgrade: bool, env: dict[str, str], uv: list[str]) -> LockJob:
    """The uv command that writes one lock of an image."""
    source = Path(lock).with_suffix(".in")
    if not t.path(str(source)).is_file():
        raise ConfigError(f"{t.path(str(source))}: the input of {lock} is missing",
                          fix=f"create {source} with the image's top-level requirements")
    argv = [*uv, "pip", "compile"]
    if lock == t.spec.lock:
        argv += ["pyproject.toml", "--extra", t.spec.kit_extra]
    platform = PLATFORM if t.spec.glibc == "2.28" else f"x86_64-manylinux_{t.spec.glibc.replace('.', '_')}"
    argv += [str(source), "--generate-hashes", "--python-version", t.spec.python, "--python-platform", platform,
             "--custom-compile-command", COMPILE_COMMAND, "--output-file", lock, "--quiet"]
    argv += expand(t.spec.compile_args.get(lock, []), env)
    if upgrade:
        argv.append("--upgrade")
    return LockJob(lock, tuple(argv))


def lock_jobs(images_file: Path, names: list[str] | None = None, *, upgrade: bool = False,
              env: dict[str, str] | None = None) -> list[LockJob]:
    """Every lock of the named images (all when none), each once, in images.toml order."""
    env = dict(os.environ if env is None else env)
    targets = all_targets(images_file)
    if names:
        unknown = sorted(set(names) - {t.name for t in targets})
        if unknown:
            raise ConfigError(f"{images_file}: no image {', '.join(unknown)}",
                              fix=known_images_fix(images_file, {t.name for t in targets}))
        targets = [t for t in targets if t.name in names]
    uv = uv_command()
    seen: dict[str, LockJob] = {}
    for t in targets:
        for lock in t.spec.locks():
            if t.spec.compile_args.get(lock) == [PREBUILT]:
                continue
            if lock not in seen:
                seen[lock] = job_for(t, lock, upgrade=upgrade, env=env, uv=uv)
    return list(seen.values())


def run_jobs(jobs: list[LockJob], root: Path, progress=lambda msg: None) -> None:
    """Run each uv command from the repository root; the first failure is an ImageError."""
    for job in jobs:
        progress(f"lock {job.lock}")
        r = subprocess.run(job.argv, cwd=root, capture_output=True, text=True)
        if r.returncode != 0:
            tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
            raise ImageError(f"uv pip compile failed for {job.lock}: {tail}",
                             fix="fix the pins in its .in file (or pass --upgrade), then run make locks again")
