"""`kit reproduce`."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import click

from kit.cli import common as C
from kit.errors import KitError


@click.command()
@click.argument("result", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--runtime", type=click.Choice(["docker", "apptainer", "sqsh", "host"]), default=None,
              help="Where to rerun: the Docker image, the SIF, the Enroot sqsh, or the host. Default: the recorded runtime.")
@click.option("--image", default=None, help="A specific Docker reference or .sif/.sqsh file to use.")
@click.option("--images", "image_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Folders to search for .sif/.sqsh artifacts (repeatable). Default: containers/artifacts.")
@click.option("--images-lock", type=click.Path(path_type=Path), default=Path("containers/images.lock.json"),
              show_default=True, help="Lock of built images (maps an image id to its SIF/sqsh sha256).")
@click.option("--allow-other-image", is_flag=True, help="Rerun even if the image differs from the record (said in the verdict).")
@C.benchmark_option
@click.option("--weights", type=click.Path(path_type=Path), default=None, envvar="HF_HUB_CACHE",
              help="Hugging Face hub cache holding the model at the recorded revision. Env: HF_HUB_CACHE.")
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Rerun with another batch size (the verdict explains it).")
@click.option("--tolerance", default=None, metavar="agreement=0.99,f1=0.01", help="WITHIN TOLERANCE thresholds.")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=Path("reproduce"), show_default=True,
              help="Folder for the verdict (reproduce-<run>-<lang>.md/.json) and the rerun's checkpoint.")
@C.json_option
def reproduce(result: Path, runtime: str | None, image: str | None, image_dirs: tuple[Path, ...], images_lock: Path,
              allow_other_image: bool, benchmark: Path | None, weights: Path | None, batch_size: int | None,
              tolerance: str | None, output: Path, as_json: bool) -> None:
    """Rerun one result in the same pinned image and say whether it reproduced.

    Resolves the recorded image (a local Docker image with the recorded id, or a SIF/sqsh
    whose sha256 matches; a mismatch is refused unless --allow-other-image), the model
    snapshot at the recorded revision (weight sha256 checked) and the dataset file (digest
    checked); reruns exactly that pair with the recorded settings; compares.

    \b
    Verdicts and exit codes:
      REPRODUCED        every prediction and raw output identical      exit 0
      WITHIN TOLERANCE  verdict agreement and F1 delta within bounds   exit 0
      DIFFERENT         anything else, with the differing items        exit 1
      (could not run)   a missing image, snapshot or dataset           exit 2

    \b
    Example:
      kit reproduce results/fr/LiquidAI__LFM2.5-350M.json --runtime docker
    """
    from kit.images.lockfile import load_lock
    from kit.repro.compare import compare, parse_tolerance, settings_differences
    from kit.repro.rerun import rerun_pair
    from kit.repro.resolve import check_weights, load_result, resolve_benchmark, resolve_image
    from kit.repro.verdict_report import verdict_data, write_verdict
    from kit.results import keys as K

    try:
        recorded = load_result(result)
        tol = parse_tolerance(tolerance)
        meta = recorded[K.METADATA]
        chosen = runtime or {"oci": "docker", "sif": "apptainer", "sqsh": "sqsh"}.get(
            recorded[K.PROVENANCE].get("image", {}).get("artifact"), "host")
        resolved = resolve_image(recorded, chosen, lock=load_lock(images_lock),
                                 search=list(image_dirs) or [Path("containers/artifacts")], image=image,
                                 allow_other=allow_other_image)
        bench = resolve_benchmark(recorded, benchmark)
        if weights is None and str(meta.get(K.MODEL_ID, "")).startswith("kit-demo/"):
            from kit.demo.run import demo_cache_dir

            weights = demo_cache_dir() / "hub"
        if weights is not None and meta.get(K.MODEL_REVISION):
            from kit.worker.snapshot import resolve_snapshot

            bad = check_weights(recorded, resolve_snapshot(meta[K.MODEL_ID], meta[K.MODEL_REVISION], weights))
            if bad:
                raise KitError(f"weights differ from the record: {'; '.join(bad)}",
                               fix="stage the exact revision the result names")
        C.say(f"rerunning {meta.get(K.RUN)} [{meta.get(K.LANGUAGE)}] on {resolved.runtime}: {resolved.note}")
        with tempfile.TemporaryDirectory(prefix="kit-reproduce-") as tmp:
            rerun, _log = rerun_pair(recorded, resolved, bench.root, weights, Path(tmp), batch_size=batch_size)
    except KitError as exc:
        click.echo(f"kit: error: could not reproduce: {exc.one_line()}", err=True)
        sys.exit(2)
    cmp = compare(recorded, rerun, tol)
    data = verdict_data(result, recorded, rerun, cmp, tol, resolved, settings_differences(recorded, rerun))
    stem = f"{result.stem}-{meta.get(K.LANGUAGE)}"
    js, md = write_verdict(output, stem, data)
    if as_json:
        C.print_json("reproduce", cmp.verdict, data)
    else:
        click.echo(f"{cmp.verdict}: {cmp.agreement:.2%} of items agree, delta F1 {cmp.metric_deltas.get('f1', 0.0):+.4f}, "
                   f"{len(cmp.differing)} differing items")
        for line in data["settings_differences"]:
            click.echo(f"  setting differs from the record: {line}")
        if not resolved.matches_record:
            click.echo(f"  image: {resolved.note}")
        click.echo(f"verdict: {md}\n         {js}")
    sys.exit(0 if cmp.verdict != "DIFFERENT" else 1)
