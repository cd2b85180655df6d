"""`kit reproduce`."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from kit.cli import common as C
from kit.errors import ConfigError, KitError


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
@C.benchmark_option
@click.option("--weights", type=click.Path(path_type=Path), default=None, envvar="HF_HUB_CACHE",
              help="Hugging Face hub cache holding the model at the recorded revision. Env: HF_HUB_CACHE.")
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Rerun with another batch size (the verdict explains it).")
@click.option("--tolerance", default=None, metavar="agreement=0.99,f1=0.01", help="WITHIN TOLERANCE thresholds.")
@click.option("--against", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="Compare with this checkpoint of the same pair (e.g. rerun on a cluster, brought back with "
                   "`kit pull`) instead of rerunning here.")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=Path("reproduce"), show_default=True,
              help="Folder for the verdict (reproduce-<run>-<lang>.md and .json).")
@C.json_option
def reproduce(result: Path, runtime: str | None, image: str | None, image_dirs: tuple[Path, ...], images_lock: Path,
              allow_other_image: bool, benchmark: Path | None, weights: Path | None, batch_size: int | None,
              tolerance: str | None, against: Path | None, output: Path, as_json: bool) -> None:
    """Rerun one result in the same pinned image and say whether it reproduced.

    Resolves the recorded image (a local Docker image with the recorded id, or a SIF/sqsh
    whose sha256 matches; a mismatch is refused unless --allow-other-image), the model
    snapshot at the recorded revision (weight sha256 checked) and the dataset file (digest
    checked); reruns exactly that pair with the recorded settings; compares.

    \b
    Verdicts and exit codes:
      REPRODUCED        every prediction and raw output identical      exit 0
      WITHIN TOLERANCE  verdict agreement and F1 delta within bounds   exit 0
                        (LightEval suites: item metrics and the largest metric delta)
      DIFFERENT         anything else, with the differing items        exit 1
      (could not run)   a missing image, snapshot or dataset           exit 2

    \b
    Examples:
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --runtime docker
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --runtime apptainer --images build/images
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --against rerun/fr/LiquidAI__LFM2.5-350M.json
    """
    import os

    from kit.repro.compare import compare, parse_tolerance, settings_differences
    from kit.repro.resolve import load_result
    from kit.repro.verdict_report import verdict_data, write_verdict
    from kit.results import keys as K

    try:
        recorded = load_result(result)
        tol = parse_tolerance(tolerance)
        if against is not None:
            rerun, resolved = _against(recorded, against)
        else:
            dirs = list(image_dirs) or [Path(os.environ.get("KIT_IMAGES_DIR", "build/images"))]
            rerun, resolved = _rerun(recorded, runtime, image, dirs, images_lock, allow_other_image, benchmark,
                                     weights, batch_size)
    except KitError as exc:
        click.echo(f"kit: error: could not reproduce: {exc.one_line()}", err=True)
        sys.exit(2)
    meta = recorded[K.METADATA]
    cmp = compare(recorded, rerun, tol)
    data = verdict_data(result, recorded, rerun, cmp, tol, resolved, settings_differences(recorded, rerun))
    js, md = write_verdict(output, f"{result.stem}-{meta.get(K.LANGUAGE)}", data)
    if as_json:
        C.print_json("reproduce", cmp.verdict, data)
    else:
        click.echo(f"{cmp.verdict}: {cmp.agreement:.2%} of items agree, delta {cmp.bounded} {cmp.bounded_delta:+.4f}, "
                   f"{len(cmp.differing)} differing items")
        for line in data["settings_differences"]:
            click.echo(f"  setting differs from the record: {line}")
        if not resolved.matches_record:
            click.echo(f"  image: {resolved.note}")
        click.echo(f"verdict: {md}\n         {js}")
    sys.exit(0 if cmp.verdict != "DIFFERENT" else 1)


def _rerun(recorded, runtime, image, image_dirs, images_lock, allow_other_image, benchmark, weights, batch_size):
    """Resolve the recorded image, snapshot and dataset, then rerun the pair; (rerun checkpoint, image)."""
    from kit.images.lockfile import load_lock
    from kit.repro.rerun import rerun_pair
    from kit.repro.resolve import check_weights, resolve_benchmark, resolve_image
    from kit.results import keys as K

    meta = recorded[K.METADATA]
    chosen = runtime or {"oci": "docker", "sif": "apptainer", "sqsh": "sqsh"}.get(
        recorded[K.PROVENANCE].get("image", {}).get("artifact"), "host")
    resolved = resolve_image(recorded, chosen, lock=load_lock(images_lock), search=image_dirs, image=image,
                             allow_other=allow_other_image)
    bench = resolve_benchmark(recorded, benchmark)
    if weights is None and str(meta.get(K.MODEL_ID, "")).startswith("kit-demo/"):
        from kit.demo.run import demo_cache_dir

        weights = demo_cache_dir() / "hub"
    if weights is not None and meta.get(K.MODEL_REVISION):
        from kit.worker.snapshot import resolve_snapshot

        bad = check_weights(recorded, resolve_snapshot(meta[K.MODEL_ID], meta[K.MODEL_REVISION], weights))
        if bad:
            raise KitError(f"weights differ from the record: {'; '.join(bad)}", fix="stage the exact revision the result names")
    C.say(f"rerunning {meta.get(K.RUN)} [{meta.get(K.LANGUAGE)}] on {resolved.runtime}: {resolved.note}")
    with tempfile.TemporaryDirectory(prefix="kit-reproduce-") as tmp:
        rerun, _log = rerun_pair(recorded, resolved, bench.root, weights, Path(tmp), batch_size=batch_size)
    return rerun, resolved


def _against(recorded, other: Path):
    """An existing checkpoint of the same pair as the rerun; (its data, a description of where it ran)."""
    from kit.repro.resolve import ResolvedImage, load_result
    from kit.results import keys as K

    rerun = load_result(other)
    a, b = recorded[K.METADATA], rerun[K.METADATA]
    for key in (K.RUN, K.LANGUAGE, K.MODEL_REVISION):
        if a.get(key) != b.get(key):
            raise ConfigError(f"{other}: {key} {b.get(key)!r} is not the result's {a.get(key)!r}",
                              fix="compare two checkpoints of the same pair")
    rec_img, new_img = recorded[K.PROVENANCE].get("image", {}), rerun[K.PROVENANCE].get("image", {})
    job = rerun[K.PROVENANCE].get("job", {})
    note = f"compared with {other} (ran on {job.get('site')}/{job.get('runtime')}, image {str(new_img.get('digest'))[:19]})"
    return rerun, ResolvedImage(job.get("runtime") or "unknown", str(other), new_img.get("digest"),
                                new_img.get("artifact_sha256"), rec_img.get("digest") == new_img.get("digest"), note)
