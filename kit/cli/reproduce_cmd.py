"""`kit reproduce`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@click.argument("result", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--runtime", type=click.Choice(["docker", "apptainer", "sqsh", "host"]), default=None,
              help="Where to rerun: the Docker image, the SIF, the Enroot sqsh, or the host. Default: the recorded runtime.")
@click.option("--image", default=None, help="A specific Docker reference or .sif/.sqsh file to use.")
@click.option("--images", "image_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Folders to search for .sif/.sqsh artifacts (repeatable). Default: build/images. Env: KIT_IMAGES_DIR.")
@click.option("--images-lock", type=click.Path(path_type=Path), default=Path("containers/images.lock.json"),
              show_default=True, envvar="KIT_IMAGES_LOCK", help="Lock of built images (maps an image id to its SIF/sqsh sha256).")
@click.option("--allow-other-image", is_flag=True, help="Rerun even if the image differs from the record (said in the verdict).")
@common.benchmark_option
@click.option("--weights", type=click.Path(path_type=Path), default=None, envvar="HF_HUB_CACHE",
              help="Hugging Face hub cache holding the model at the recorded revision. Env: HF_HUB_CACHE.")
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Rerun with another batch size (the verdict explains it).")
@click.option("--tolerance", default=None, metavar="agreement=0.99,f1=0.01", help="WITHIN TOLERANCE thresholds.")
@click.option("--against", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="Compare with this checkpoint of the same pair (e.g. rerun on a cluster, brought back with "
                   "`kit pull`) instead of rerunning here.")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=Path("reproduce"), show_default=True,
              help="Folder for the verdict (reproduce-<run>-<lang>.md and .json), beside earlier ones; one holding "
                   "files kit did not write is refused.")
@click.option("--as", "as_", multiple=True, metavar="ENGINE|DTYPE",
              help="Rerun on purpose on another engine (vllm, gguf, transformers-5.11, ...) or dtype (float32, "
                   "bfloat16, float16), to measure drift: the verdict records both setups, the items whose verdict "
                   "changed and the F1 change with its interval, and `kit report` gathers such verdicts into its "
                   "drift table. A difference is the measurement, not a failure (exit 0). Repeatable: --as vllm "
                   "--as bfloat16.")
@click.option("--as-model", default=None, metavar="ORG/NAME[@REVISION]",
              help="With --as gguf: the repository holding the same weights as a GGUF (default revision: its refs/main "
                   "in --weights).")
@click.option("--as-option", multiple=True, metavar="KEY=VALUE",
              help="With --as: an option of the engine the rerun uses, as a roster's [run.options] has it (e.g. "
                   "--as-option enforce_eager=true for vLLM on a CPU without a compiler). Repeatable.")
@click.option("--engine-env", multiple=True, metavar="NAME=VALUE",
              help="An engine setting for the rerun (e.g. VLLM_CPU_KVCACHE_SPACE=1; VLLM_*, thread counts), over the "
                   "recorded ones; the rerun's provenance records it. Repeatable.")
@click.option("--trusted-keys", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Require the image's provenance statements (kit images build/convert) to be signed by one of "
                   "these public keys (JSON from kit keys export), and to be there.")
@common.json_option
def reproduce(result: Path, runtime: str | None, image: str | None, image_dirs: tuple[Path, ...], images_lock: Path,
              allow_other_image: bool, benchmark: Path | None, weights: Path | None, batch_size: int | None,
              tolerance: str | None, against: Path | None, output: Path, as_: tuple[str, ...], as_model: str | None,
              as_option: tuple[str, ...], engine_env: tuple[str, ...], trusted_keys: Path | None, as_json: bool) -> None:
    """Rerun one result in the same pinned image and say whether it reproduced.

    Resolves the recorded image (a local Docker image with the recorded id, or a SIF/sqsh
    whose sha256 matches; a mismatch is refused unless --allow-other-image), the model
    snapshot at the recorded revision (weight sha256 checked) and the dataset file (digest
    checked); checks the image's provenance statements when it has them (a SIF's names its
    sha256 and the image, the build's the image and its lock; --trusted-keys: signed by one of
    those keys, and required); reruns exactly that pair with the recorded settings; compares. A result inside a
    kit workspace (a roster.toml above its results folder, as `kit run` and `kit demo` leave
    it) reruns on that roster's benchmark and the weights of the site it ran at, unless
    --benchmark and --weights say otherwise.

    \b
    Verdicts and exit codes:
      REPRODUCED        every prediction and raw output identical      exit 0
      WITHIN TOLERANCE  verdict agreement and F1 delta within bounds   exit 0
                        (LightEval suites: item metrics and the largest metric delta)
      DIFFERENT         anything else, with the differing items        exit 1
      (could not run)   a missing image, snapshot or dataset           exit 2
      with --as         any verdict: the drift it measured             exit 0

    \b
    Examples:
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --runtime docker
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --runtime apptainer --images build/images
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --against rerun/fr/LiquidAI__LFM2.5-350M.json
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --as bfloat16 --runtime host
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --as vllm --runtime docker --as-option enforce_eager=true
      kit reproduce kit-demo/results/fr/kit-demo__tiny-llama.json --as gguf --as-model kit-demo/tiny-llama-gguf
    """
    from kit.errors import ConfigError
    from kit.repro.compare import DIFFERENT, parse_tolerance
    from kit.repro.deliberate import parse_as, parse_engine_env
    from kit.repro.reproduce import RerunOptions, reproduce

    deliberate = parse_as(as_, as_model, as_option)
    if deliberate and against is not None:
        raise ConfigError("--as reruns here on another engine or dtype; --against takes a rerun made elsewhere",
                          fix="leave one out (a rerun elsewhere shows its own settings in the verdict)")
    if deliberate and allow_other_image:
        raise ConfigError("--allow-other-image with --as: a deliberate rerun already uses the other engine's image "
                          "from the images lock", fix="leave --allow-other-image out")

    dirs = tuple(image_dirs) or (Path(os.environ.get("KIT_IMAGES_DIR", "build/images")),)
    options = RerunOptions(runtime=runtime, image=image, image_dirs=dirs, images_lock=images_lock,
                           allow_other_image=allow_other_image, benchmark=benchmark, weights=weights,
                           batch_size=batch_size, trusted_keys=common.trusted_keys(trusted_keys),
                           deliberate=deliberate, engine_env=parse_engine_env(engine_env))
    done = reproduce(result, options, parse_tolerance(tolerance), output, against=against, say=common.say)
    failed = done.comparison.verdict == DIFFERENT and not done.deliberate
    render(Outcome("reproduce", done.data, _lines(done), failed=failed), as_json)


def _lines(done):
    """The verdict with its agreement and delta, the settings and image that differ from the record,
    and where the verdict files are."""
    cmp = done.comparison
    what = f" (deliberate rerun {done.data['deliberate']}: drift measured, not a failure)" if done.deliberate else ""
    yield (f"{cmp.verdict}{what}: {cmp.agreement:.2%} of items agree, delta {cmp.bounded} {cmp.bounded_delta:+.4f}, "
           f"{len(cmp.differing)} differing items")
    paired = done.data.get("paired")
    if paired:
        f1 = paired["f1"]
        yield (f"  verdicts changed: {paired['changed']}/{paired['items']}; F1 change {f1['diff']:+.4f} "
               f"(95% interval {f1['low']:+.4f} to {f1['high']:+.4f})")
    for line in done.settings_differences:
        yield f"  setting differs from the record: {line}"
    if not done.resolved.matches_record:
        yield f"  image: {done.resolved.note}"
    if done.resolved.provenance:
        yield f"  image provenance: {done.resolved.provenance}"
    yield f"verdict: {done.files[1]}\n         {done.files[0]}"
