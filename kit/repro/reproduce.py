"""`kit reproduce` as one library call: resolve a result's image, dataset and weights, rerun its
pair there (or take a rerun made elsewhere), compare, and write the verdict files."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import ConfigError, KitError, RerunError
from kit.outputs import check_output
from kit.repro.compare import Comparison, Tolerance, compare, settings_differences
from kit.repro.deliberate import Deliberate
from kit.repro.resolve import ResolvedImage, load_result
from kit.repro.verdict_report import earlier_verdicts, verdict_data, write_verdict
from kit.results import keys

# the runtime a result is rerun on by default: the one its recorded artifact belongs to
RUNTIME_OF_ARTIFACT = {"oci": "docker", "sif": "apptainer", "sqsh": "sqsh"}


@dataclass(frozen=True)
class RerunOptions:
    """Where and how to rerun: runtime (default: the recorded artifact's), an explicit image, folders
    to find SIF/sqsh files in, the lock of built images, the benchmark and weights (default: those of
    the result's workspace), another batch size."""

    runtime: str | None = None
    image: str | None = None
    image_dirs: tuple[Path, ...] = (Path("build/images"),)
    images_lock: Path = Path("containers/images.lock.json")
    allow_other_image: bool = False
    benchmark: Path | None = None
    weights: Path | None = None
    batch_size: int | None = None
    trusted_keys: list[Any] | None = None   # the public keys the image's provenance statements must be signed by
    deliberate: Deliberate = Deliberate()   # kit reproduce --as: another engine or dtype, on purpose
    engine_env: dict[str, str] = field(default_factory=dict)   # engine settings given for the rerun (--engine-env)


@dataclass(frozen=True)
class Reproduction:
    """The verdict, where the rerun ran, the verdict's data and its two files (.json, .md)."""

    comparison: Comparison
    resolved: ResolvedImage
    data: dict[str, Any]
    files: tuple[Path, Path]
    settings_differences: list[str] = field(default_factory=list)

    @property
    def deliberate(self) -> bool:
        """Whether the rerun changed its engine or dtype on purpose (a drift measurement, not a reproduction)."""
        return bool(self.data.get("deliberate"))


def reproduce(result: Path, options: RerunOptions, tolerance: Tolerance, output: Path, *,
              against: Path | None = None, say: Callable[[str], None] = lambda msg: None) -> Reproduction:
    """Rerun (or, with `against`, take the rerun of) one result and compare; write the verdict into
    `output`. A result that cannot be rerun (image, data or weights missing or not the recorded
    ones) is a RerunError."""
    check_output(output, "reproduce", force_needed=False, legacy=earlier_verdicts)   # before an hour's rerun
    try:
        recorded = load_result(result)
        if options.deliberate:
            from kit.repro.deliberate import check_applies

            check_applies(options.deliberate, recorded, result)
        if against is not None:
            if same_file(against, result):
                raise ConfigError(f"{against}: --against names the result itself, which agrees with itself",
                                  fix="give another checkpoint of the same pair (one a site or a rerun wrote)")
            rerun, resolved = rerun_elsewhere(recorded, against)
        else:
            rerun, resolved = rerun_here(result, recorded, options, say)
    except KitError as exc:
        raise RerunError(f"could not reproduce: {exc.message}", fix=exc.fix) from exc
    cmp = compare(recorded, rerun, tolerance)
    differences = settings_differences(recorded, rerun)
    data = verdict_data(result, recorded, rerun, cmp, tolerance, resolved, differences, options.deliberate)
    stem = f"{result.stem}-{recorded[keys.METADATA].get(keys.LANGUAGE)}" + as_suffix(options.deliberate)
    files = write_verdict(output, stem, data)
    return Reproduction(cmp, resolved, data, files, differences)


def rerun_here(result: Path, recorded: dict[str, Any], options: RerunOptions,
               say: Callable[[str], None]) -> tuple[dict[str, Any], ResolvedImage]:
    """Resolve the recorded image, snapshot and dataset, then rerun the pair; (rerun checkpoint, image).
    The benchmark and weights default to those of the sweep the result lies in (its workspace)."""
    from kit.images.built import load_lock
    from kit.repro.rerun import rerun_pair
    from kit.repro.deliberate import changed_run
    from kit.repro.resolve import (check_image_provenance, check_weights, recorded_run, resolve_backend_image,
                                   resolve_benchmark, resolve_image, sweep_inputs)
    from kit.weights.snapshot import resolve_snapshot

    meta = recorded[keys.METADATA]
    wanted = options.deliberate
    chosen = options.runtime or RUNTIME_OF_ARTIFACT.get(recorded[keys.PROVENANCE].get(keys.PROV_IMAGE, {}).get(keys.IMAGE_ARTIFACT),
                                                       "host")
    lock = load_lock(options.images_lock)
    if wanted.backend:
        resolved = resolve_backend_image(wanted.backend, chosen, lock=lock, lock_path=options.images_lock,
                                         search=list(options.image_dirs), image=options.image)
    else:
        resolved = resolve_image(recorded, chosen, lock=lock, search=list(options.image_dirs),
                                 image=options.image, allow_other=options.allow_other_image)
    resolved.provenance = check_image_provenance(resolved, lock, options.images_lock, options.trusted_keys,
                                                 options.allow_other_image)
    say(f"image provenance: {resolved.provenance}")
    sweep = sweep_inputs(result, recorded)
    bench = resolve_benchmark(recorded, options.benchmark or sweep.benchmark)
    weights = options.weights or sweep.weights
    run = None
    if wanted.model:   # the same weights in the engine's format: its own snapshot, whose digests the rerun records
        revision = wanted.revision or resolve_snapshot(wanted.model, None, weights).name
        resolve_snapshot(wanted.model, revision, weights)
        run = changed_run(recorded_run(recorded), wanted, revision)
    else:
        if weights is not None and meta.get(keys.MODEL_REVISION):
            bad = check_weights(recorded, resolve_snapshot(meta[keys.MODEL_ID], meta[keys.MODEL_REVISION], weights))
            if bad:
                raise KitError(f"weights differ from the record: {'; '.join(bad)}",
                               fix="stage the exact revision the result names (kit weights stage), then kit weights verify")
        if wanted:
            run = changed_run(recorded_run(recorded), wanted, meta.get(keys.MODEL_REVISION))
    what = f" {wanted.describe()}" if wanted else ""
    say(f"rerunning {meta.get(keys.RUN)} [{meta.get(keys.LANGUAGE)}]{what} on {resolved.runtime}: {resolved.note}")
    with tempfile.TemporaryDirectory(prefix="kit-reproduce-") as tmp:
        rerun, _log = rerun_pair(recorded, resolved, bench.root, weights, Path(tmp), batch_size=options.batch_size,
                                 run=run, extra_env=options.engine_env)
    return rerun, resolved


def as_suffix(deliberate: Deliberate) -> str:
    """The verdict file name's mark of a deliberate rerun ('-as-bfloat16', '-as-vllm-bfloat16', and with the
    model's name for a GGUF: '-as-gguf-tiny-llama-gguf'), so that reruns of one result on several setups keep
    their own verdicts; '' for a reproduction."""
    model = deliberate.model.rsplit("/", 1)[-1] if deliberate.model else None
    values = [v for v in (deliberate.backend, model, deliberate.dtype) if v]
    return "-as-" + "-".join(values) if values else ""


def rerun_elsewhere(recorded: dict[str, Any], other: Path) -> tuple[dict[str, Any], ResolvedImage]:
    """An existing checkpoint of the same pair as the rerun; (its data, a description of where it ran)."""
    rerun = load_result(other)
    a, b = recorded[keys.METADATA], rerun[keys.METADATA]
    for key in (keys.RUN, keys.LANGUAGE, keys.MODEL_REVISION):
        if a.get(key) != b.get(key):
            raise ConfigError(f"{other}: {key} {b.get(key)!r} is not the result's {a.get(key)!r}",
                              fix="compare two checkpoints of the same pair")
    rec_img, new_img = recorded[keys.PROVENANCE].get(keys.PROV_IMAGE, {}), rerun[keys.PROVENANCE].get(keys.PROV_IMAGE, {})
    job = rerun[keys.PROVENANCE].get(keys.PROV_JOB, {})
    note = f"compared with {other} (ran on {job.get('site')}/{job.get('runtime')}, image {str(new_img.get('digest'))[:19]})"
    return rerun, ResolvedImage(job.get(keys.JOB_RUNTIME) or "unknown", str(other), new_img.get(keys.IMAGE_DIGEST),
                                new_img.get(keys.IMAGE_ARTIFACT_SHA256),
                                rec_img.get(keys.IMAGE_DIGEST) == new_img.get(keys.IMAGE_DIGEST), note)


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (a link, a hard link or another spelling of it)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
