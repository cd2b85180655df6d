"""`kit demo --drift`: the demo's first drift table. Each of the demo's results is rerun on purpose
(`kit reproduce --as`) on the setups this machine can run: transformers in bfloat16 on the host
always; llama.cpp (the demo Llama written as an F32 GGUF) and vLLM on the CPU in their Docker images
when the images lock records them and Docker holds them. A setup that cannot run here is named with
the command that makes it possible, never silently left out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kit.demo.gguf import GGUF_FILE
from kit.errors import KitError
from kit.images.built import ImagesLock
from kit.results import keys

VERDICTS_DIR = "reproduce-drift"     # beside the results folder: `kit report` reads reproduce* folders
# vLLM on a CPU: eager mode (torch.compile needs a C++ compiler the image does not carry), a 1 GiB KV cache
VLLM_CPU_OPTIONS = ("enforce_eager=true",)
VLLM_CPU_ENV = ("VLLM_CPU_KVCACHE_SPACE=1",)
# the demo GGUF (kit.demo.gguf): one F32 file
GGUF_OPTIONS = (f'gguf_file="{GGUF_FILE}"', 'quantization="F32"')


@dataclass(frozen=True)
class DriftSetup:
    """One setup the demo's results are rerun on: its --as values, runtime, options and engine settings."""

    name: str
    as_values: tuple[str, ...]
    runtime: str
    task: str = keys.TASK_GENERATE       # the task of the results it applies to ("" for every result)
    as_model: str | None = None
    as_options: tuple[str, ...] = ()
    engine_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class DriftOutcome:
    """What `kit demo --drift` did: each rerun's verdict file, each setup it could not run and why."""

    verdicts: list[Path]
    skipped: dict[str, str]
    failed: dict[str, str]


def drift_setups(hub: Path, lock: ImagesLock | None, lock_path: Path,
                 image_present: Callable[[str], bool]) -> tuple[list[DriftSetup], dict[str, str]]:
    """The setups this machine can run ([setups], {setup: why not, with the fix} for the others), given the
    images lock (None: there is none at `lock_path`) and whether the Docker engine holds an image id."""
    setups = [DriftSetup("transformers bfloat16", ("bfloat16",), "host", task="")]
    skipped: dict[str, str] = {}
    for backend, name in (("gguf", "llama.cpp"), ("vllm", "vLLM")):
        built = lock.images.get(backend) if lock is not None else None
        if built is None:
            skipped[name] = (f"{lock_path} records no {backend} image: build it with `make image-{backend} "
                             "VARIANT=cpu` (root, Docker), or pass the lock that records it with --images-lock")
            continue
        if not image_present(built.image_id):
            skipped[name] = f"the {backend} image {built.tag} is not in this machine's Docker engine (docker load it, or build it)"
            continue
        if backend == "gguf":
            try:
                from kit.demo.gguf import write_gguf

                repo, _revision = write_gguf(hub)
            except ImportError:
                skipped[name] = "writing the demo Llama as a GGUF needs the `gguf` package (pip install 'kit-sweep[demo]')"
                continue
            setups.append(DriftSetup(name, ("gguf",), "docker", as_model=repo, as_options=GGUF_OPTIONS))
        else:
            setups.append(DriftSetup(name, ("vllm",), "docker", as_options=VLLM_CPU_OPTIONS, engine_env=VLLM_CPU_ENV))
    return setups, skipped


def run_drift(results: Path, setups: list[DriftSetup], skipped: dict[str, str],
              rerun: Callable[[Path, DriftSetup, Path], Path],
              say: Callable[[str], None] = lambda msg: None) -> DriftOutcome:
    """Rerun every complete demo result on every setup that applies to its task with `rerun(result,
    setup, verdicts folder)` (kit reproduce --as; returns the verdict file); the verdicts go to
    VERDICTS_DIR beside the results folder, where `kit report` finds them. A rerun that fails (a
    KitError) is reported with its reason and does not stop the others."""
    from kit.results.checkpoint import validate_checkpoint
    from kit.results.keys import PairState
    from kit.results.store import iter_checkpoint_files

    out = Path(results).parent / VERDICTS_DIR
    verdicts: list[Path] = []
    failed: dict[str, str] = {}
    for path in iter_checkpoint_files(results):
        state = validate_checkpoint(path)
        if state.state != PairState.COMPLETE or state.data is None:
            continue
        task = state.data[keys.METADATA].get(keys.TASK, keys.TASK_GENERATE)
        for s in setups:
            if s.task and s.task != task:
                continue
            where = f"{path.parent.name}/{path.name} as {s.name}"
            say(f"drift: rerunning {where}")
            try:
                verdicts.append(rerun(path, s, out))
            except KitError as exc:
                failed[where] = exc.one_line()
    return DriftOutcome(verdicts, skipped, failed)
