"""Resolve what a result names: its image (by digest or artifact sha256), its model snapshot
(weight sha256 checked) and its dataset file (digest checked). Refuse a mismatch unless told."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit import safejson
from kit.config.dataset import Dataset
from kit.config.kinds import load_benchmark
from kit.config.roster import Run
from kit.errors import ConfigError, ImageError
from kit.files import file_sha256, read_regular_file
from kit.images.built import ImagesLock
from kit.results import keys
from kit.results.checkpoint import validate_sealed
from kit.results.keys import PairState

RUNTIMES = ("docker", "apptainer", "sqsh", "host")

_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass
class ResolvedImage:
    """The image a rerun uses, and whether it is the one the result recorded."""

    runtime: str
    ref: str | None            # docker image id, .sif or .sqsh path; None for host
    digest: str | None
    sha256: str | None
    matches_record: bool
    note: str
    provenance: str = ""       # what its provenance statements say (check_image_provenance)
    deliberate: bool = False   # another backend's image, chosen on purpose (kit reproduce --as)


def docker_image_id(ref: str) -> str | None:
    """The local Docker engine's id of an image reference (tag or id); None when it has none or Docker
    does not answer."""
    try:
        out = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def resolve_image(result: dict[str, Any], runtime: str, *, lock: ImagesLock, search: list[Path],
                  image: str | None = None, allow_other: bool = False) -> ResolvedImage:
    """Find the recorded image for `runtime`: a local Docker image with the recorded id, or a SIF/sqsh
    whose sha256 the result (or the image lock, for that image id) records."""
    prov = result.get(keys.PROVENANCE, {})
    rec = prov.get(keys.PROV_IMAGE, {})
    digest, backend = rec.get(keys.IMAGE_DIGEST), rec.get(keys.IMAGE_BACKEND)
    if runtime == "host":
        if digest is None:
            return ResolvedImage("host", None, None, None, True, "recorded on the host runtime: no image")
        if not allow_other:
            raise ImageError(f"the result ran in image {digest[:19]}; the host runtime would not use it",
                             fix="use --runtime docker|apptainer|sqsh, or --allow-other-image to rerun on the host anyway")
        return ResolvedImage("host", None, None, None, False, f"host runtime instead of image {digest[:19]} (--allow-other-image)")
    if digest is None and image is None:
        raise ImageError("the result records no image (it ran on the host runtime)",
                         fix="rerun it with --runtime host")
    if runtime == "docker":
        found = docker_image_id(image or digest)
        if found and found == digest:
            return ResolvedImage("docker", found, found, None, True, "the recorded image, by id")
        if found and allow_other:
            return ResolvedImage("docker", found, found, None, False,
                                 f"image {found[:19]} is not the recorded {str(digest)[:19]} (--allow-other-image)")
        if found:
            raise ImageError(f"image {image} is {found[:19]}, not the recorded {str(digest)[:19]}",
                             fix="load the recorded image, or pass --allow-other-image to compare anyway")
        if image is not None:   # the image asked for by name is not there, whatever the record says
            raise ImageError(f"--image {image} is not in the local Docker engine",
                             fix="name an image `docker images` lists (or its id), or leave --image out to rerun "
                                 "in the recorded one")
        raise ImageError(f"image {digest} is not in the local Docker engine",
                         fix=f"docker load -i the image archive of {backend} (kit images save), or build it "
                             f"(make image-{backend}) and pass --allow-other-image")
    kind = "sif" if runtime == "apptainer" else "sqsh"
    wanted = {rec.get(keys.IMAGE_ARTIFACT_SHA256)} if rec.get(keys.IMAGE_ARTIFACT) == kind else set()
    built = lock.images.get(backend) if backend else None
    if built and built.image_id == digest and kind in built.artifacts:
        wanted.add(built.artifacts[kind].sha256)
    wanted.discard(None)
    candidates = [Path(image)] if image else sorted(p for d in search for p in Path(d).glob(f"*.{kind}"))
    for path in candidates:
        sha = file_sha256(path)
        if sha in wanted:
            return ResolvedImage(runtime, str(path), digest, sha, True, f"{kind} with the recorded sha256")
    if image and allow_other:
        return ResolvedImage(runtime, image, None, file_sha256(Path(image)), False,
                             f"{kind} {image} does not match the record (--allow-other-image)")
    names = ", ".join(sorted(w[:16] for w in wanted)) or "none recorded"
    raise ImageError(f"no .{kind} with the recorded sha256 ({names}) for image {str(digest)[:19]} in "
                     f"{', '.join(map(str, search)) or '(no folder)'}",
                     fix=f"pass --images DIR holding it, or convert the image: kit images convert {backend} --to {kind}")


def resolve_backend_image(backend: str, runtime: str, *, lock: ImagesLock, lock_path: Path, search: list[Path],
                          image: str | None = None) -> ResolvedImage:
    """The image of another backend for a deliberate rerun (kit reproduce --as ENGINE): the build the
    images lock records for it, as a local Docker image with that id or a SIF/sqsh with its recorded
    sha256 (or `image`, which must be that build). An ImageError names what to build or convert."""
    if runtime == "host":
        return ResolvedImage("host", None, None, None, False, f"{backend} on the host (this Python environment)",
                             deliberate=True)
    built = lock.images.get(backend)
    if built is None:
        raise ImageError(f"the images lock {lock_path} records no {backend} image to rerun in",
                         fix=f"build it (make image-{backend}, or kit images build {backend} --variant cpu), or "
                             "pass --images-lock with the lock that records it")
    if runtime == "docker":
        found = docker_image_id(image or built.image_id)
        if found != built.image_id:
            raise ImageError(f"the {backend} image {built.image_id[:19]} ({built.tag}) is not in the local Docker engine"
                             + (f"; {image} is {str(found)[:19]}" if image and found else ""),
                             fix=f"build it (kit images build {backend}) or docker load its archive")
        return ResolvedImage("docker", found, found, None, False, f"the {backend} image {built.tag} ({found[:19]})",
                             deliberate=True)
    kind = "sif" if runtime == "apptainer" else "sqsh"
    if kind not in built.artifacts:
        raise ImageError(f"the images lock records no .{kind} of the {backend} image {built.image_id[:19]}",
                         fix=f"kit images convert {backend} --to {kind}")
    wanted = built.artifacts[kind].sha256
    for path in [Path(image)] if image else sorted(p for d in search for p in Path(d).glob(f"*.{kind}")):
        if file_sha256(path) == wanted:
            return ResolvedImage(runtime, str(path), built.image_id, wanted, False,
                                 f"the {backend} {kind} {path.name}", deliberate=True)
    raise ImageError(f"no .{kind} with sha256 {wanted[:16]} (the {backend} image's) in "
                     f"{', '.join(map(str, search)) or '(no folder)'}",
                     fix=f"pass --images DIR holding it, or kit images convert {backend} --to {kind}")


def check_image_provenance(resolved: ResolvedImage, lock: ImagesLock, lock_path: Path,
                           trusted: list[Any] | None = None, allow_other: bool = False) -> str:
    """Check the recorded image's provenance statements (kit.images.attest) before it is trusted: a SIF's or
    sqsh's statement names its sha256 and the image, the build's names the image and the lock file and
    Dockerfile the lock records; with `trusted` keys each must be signed by one of them. An ImageError
    when a link does not hold (or, with keys, when a statement is missing), unless `allow_other` (then said);
    else a line saying what held."""
    from kit.images.attest import trace_artifact, trace_build

    if resolved.runtime == "host" or not (resolved.matches_record or resolved.deliberate) or resolved.digest is None:
        return "not checked: no recorded image is used"
    built = next((b for b in lock.images.values() if b.image_id == resolved.digest), None)
    if built is None:
        if trusted is not None:
            raise ImageError(f"the images lock {lock_path} has no build of image {resolved.digest[:19]}, so its "
                             "provenance cannot be checked", fix="pass --images-lock with the lock the image was built "
                                                                 "with, or leave --trusted-keys out")
        return f"not checked: {lock_path} does not record image {resolved.digest[:19]}"
    trace = (trace_artifact(Path(resolved.ref), built, lock_path, trusted) if resolved.runtime != "docker"
             else trace_build(built, lock_path, trusted))
    if trace.broken and allow_other:
        return f"DOES NOT HOLD: {trace.broken[0]} (--allow-other-image)"
    if trace.broken:
        raise ImageError(f"the image's provenance does not hold: {trace.broken[0]}",
                         fix="use the image its statements name (kit images convert again, or pull it again), "
                             "or pass --allow-other-image to rerun in it anyway")
    if trace.missing:
        if trusted is not None:
            raise ImageError(f"the image's provenance cannot be checked: {trace.missing}",
                             fix="convert or build it again with a signing key (kit keys init), or leave --trusted-keys out")
        return f"{'; '.join(trace.held) + '; ' if trace.held else ''}{trace.missing} (made before kit attested images)"
    return "; ".join(trace.held) + ("; signed by a trusted key" if trusted is not None else "; signatures not checked")


def check_weights(result: dict[str, Any], snapshot: Path) -> list[str]:
    """Weight files whose sha256, hashed now in full, is not the one the result records, and weight
    files it does not record (empty when all match). A reviewer reruns one pair, so every byte is
    read: a file changed at the same size since staging, or since the job ran, is caught."""
    from kit.weights.snapshot import weight_files_sha256

    recorded = result.get(keys.PROVENANCE, {}).get(keys.PROV_MODEL, {}).get(keys.WEIGHT_FILES_SHA256) or {}
    now = weight_files_sha256(snapshot)
    problems = [f"{name}: recorded {sha[:16]}, found {str(now.get(name))[:16]}"
                for name, sha in sorted(recorded.items()) if now.get(name) != sha]
    problems += [f"{name}: a weight file the result does not record" for name in sorted(set(now) - set(recorded))]
    return problems


@dataclass(frozen=True)
class SweepInputs:
    """What the sweep a result belongs to names: its benchmark folder and its site's weights folder."""

    workspace: Path | None = None
    benchmark: Path | None = None
    weights: Path | None = None


def sweep_inputs(result_path: Path, result: dict[str, Any]) -> SweepInputs:
    """The benchmark and weights folders of the sweep that wrote a result, when the result lies in a
    kit workspace: the nearest folder above its results folder holding roster.toml (as `kit run` and
    `kit demo` leave them). The benchmark is the roster's `benchmark`; the weights are the `weights` of
    the site the job ran at (provenance.job.site) in the sites.toml beside it. Empty outside one."""
    from kit.config.roster import load_roster
    from kit.config.sites import load_sites

    folder = next((f for f in Path(result_path).resolve().parents[1:] if (f / "roster.toml").is_file()), None)
    if folder is None:
        return SweepInputs()
    roster, roster_dir = load_roster(folder / "roster.toml", allow_unpinned=True)
    benchmark = roster_dir / roster.benchmark if roster.benchmark else None
    weights = None
    site_name = result.get(keys.PROVENANCE, {}).get(keys.PROV_JOB, {}).get(keys.JOB_SITE)
    if (folder / "sites.toml").is_file() and site_name:
        site = load_sites(folder / "sites.toml").site.get(site_name)
        if site is not None and site.weights and not site.is_remote:
            weights = (folder / Path(site.weights).expanduser()).resolve()
    return SweepInputs(folder, benchmark, weights)


def resolve_benchmark(result: dict[str, Any], path: Path | None) -> Dataset:
    """The benchmark the result read (folder `path`): its language file and prompt must have the
    recorded digests."""
    meta = result.get(keys.METADATA, {})
    if path is None:
        raise ConfigError("no benchmark folder for the rerun: the result is not inside a kit workspace "
                          "(no roster.toml above its results folder)",
                          fix="pass --benchmark DIR, the benchmark the result was run on")
    bench = load_benchmark(Path(path))
    lang = meta.get(keys.LANGUAGE)
    data = bench.load_language(lang)
    if data.file_sha256 != meta.get(keys.BENCHMARK_SHA256):
        raise ConfigError(f"{data.path}: sha256 {data.file_sha256[:16]} is not the recorded "
                          f"{str(meta.get(keys.BENCHMARK_SHA256))[:16]}", fix="pass the benchmark the result was run on")
    run = Run.model_validate(recorded_run(result), context={"allow_unpinned": True})
    prompt = bench.prompt_for(run)
    if prompt.sha256 != meta.get(keys.PROMPT_SHA256):
        raise ConfigError(f"{prompt.path}: the prompt of run {run.name} is not the recorded one "
                          f"({str(meta.get(keys.PROMPT_SHA256))[:16]})", fix="pass the benchmark the result was run on")
    return bench


def recorded_run(result: dict[str, Any]) -> dict[str, Any]:
    """The roster run (as TOML keys) that a result's metadata records."""
    meta = result[keys.METADATA]
    run = {
        "model": meta.get(keys.RUN) or meta[keys.MODEL_ID], "backend": meta[keys.BACKEND],
        "task": meta.get(keys.TASK, keys.TASK_GENERATE), "dtype": meta.get(keys.DTYPE, "auto"),
        "batch_size": meta[keys.BATCH_SIZE], "max_new_tokens": meta[keys.MAX_NEW_TOKENS],
        "seed": meta.get(keys.SEED, 0), "trust_remote_code": bool(meta.get(keys.TRUST_REMOTE_CODE, False)),
        "options": dict(meta.get(keys.OPTIONS) or {}),
    }
    if meta.get(keys.MODEL_REVISION):
        run["revision"] = meta[keys.MODEL_REVISION]
    if meta.get(keys.PROMPT_FILE):
        run["prompt"] = meta[keys.PROMPT_FILE]
    return run


RESULT_LIMIT_BYTES = 256 << 20   # far above any checkpoint kit writes; a bound on what a bad path can cost


def load_result(path: Path) -> dict[str, Any]:
    """A checkpoint as a dict; unreadable input is a ConfigError."""
    try:
        data = safejson.loads(read_regular_file(path, "a checkpoint", RESULT_LIMIT_BYTES,
                                                fix="pass a RESULTS/<lang>/<run>.json file").decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable checkpoint ({exc})", fix="pass a RESULTS/<lang>/<run>.json file") from None
    if not isinstance(data, dict) or keys.METADATA not in data or keys.PREDICTIONS not in data:
        raise ConfigError(f"{path}: not a kit checkpoint (no metadata/predictions)", fix="pass a RESULTS/<lang>/<run>.json file")
    if keys.PROVENANCE not in data:
        raise ConfigError(f"{path}: has no provenance block, so it cannot be reproduced by kit",
                          fix="only results written by kit carry the facts a rerun needs")
    # the sealed evidence policy, as the commands that certify hold a file: its log, names that match its
    # place, its verdicts, and its bytes those its job logged (an edited provenance would pick the image and
    # the facts a rerun is judged by)
    state = validate_sealed(path)
    if state.state != PairState.COMPLETE:
        raise ConfigError(f"{path}: not a sound checkpoint: {'; '.join(state.reasons[:3])}",
                          fix="reproduce a checkpoint `kit check` accepts, with the .mllog its job wrote beside it")
    revision = data[keys.METADATA].get(keys.MODEL_REVISION)
    if revision and not (isinstance(revision, str) and _HEX40.fullmatch(revision)):
        raise ConfigError(f"{path}: metadata.model_revision {revision!r} is not a 40-hex commit, so no snapshot "
                          "can be matched to it", fix="reproduce a result of a pinned run")
    return data
