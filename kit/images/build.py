"""`kit images build`: build a backend image with the docker SDK and record it in the lock of
built images (containers/images.lock.json)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import kit
from kit.errors import ConfigError, ImageError
from kit.images import engine
from kit.images.attest import build_attestation_path, build_statement, write_attestation
from kit.images.built import GPU_ARCHS_LABEL, BuiltImage, ImagesLock, host_lock, update_lock
from kit.images.context import write_context
from kit.images.progress import Progress
from kit.images.spec import Target, input_sha256, kit_commit
from kit.signing import signing_key_for_tools


@dataclass(frozen=True)
class BuildOptions:
    """How to build: CA bundle for pip, wheelhouse (offline), base override, cache use."""

    ca_bundle: Path | None = None
    wheelhouse: Path | None = None
    base: str | None = None
    no_cache: bool = False
    quiet: bool = False
    # with a CA bundle, the build-stage images that hold it are removed unless this is set
    keep_build_stages: bool = False
    # remove them without a CA bundle too: they are Docker's cache for the next build (a CUDA
    # image's build stage holds the wheels and the venv, 9 to 15 GB), kept by default
    drop_build_stages: bool = False


def build_args(t: Target, opts: BuildOptions, commit: str) -> dict[str, str]:
    """The build arguments passed to Docker: the image's, BASE_IMAGE and KIT_COMMIT."""
    return {**t.spec.build_args, "BASE_IMAGE": opts.base or t.spec.base, "KIT_COMMIT": commit}


def labels(t: Target, commit: str) -> dict[str, str]:
    """Labels of the final image: what it is and what it was built from (a CUDA image: the GPU
    architectures its code runs on, as sm_NN/compute_NN flags)."""
    out = {"kit.backend": t.name, "kit.variant": t.variant or "", "kit.version": kit.__version__,
           "kit.lock.sha256": t.lock_sha256(), "kit.dockerfile.sha256": t.dockerfile_sha256(),
           "org.opencontainers.image.revision": commit,
           "org.opencontainers.image.title": f"kit {t.name}" + (f" ({t.variant})" if t.variant else "")}
    code = t.spec.cuda_code()
    if code is not None:
        out[GPU_ARCHS_LABEL] = code.flags()
    return out


def _stream_build(t: Target, opts: BuildOptions, args: dict[str, str], commit: str, progress: Progress) -> str:
    from kit.images import wheelhouse

    wheels: list[Path] = []
    if opts.wheelhouse is not None:
        wheelhouse.download(t, opts.wheelhouse, progress.line)
        wheels = wheelhouse.select(t, opts.wheelhouse)
        progress.line(f"wheelhouse: {len(wheels)} files from {opts.wheelhouse}; building with no network")
    with tempfile.TemporaryFile(prefix="kit-context-") as ctx:
        write_context(t, ctx, ca_bundle=opts.ca_bundle, wheels=wheels)
        ctx.seek(0)
        events = engine.client().api.build(
            fileobj=ctx, custom_context=True, dockerfile=t.spec.dockerfile, tag=t.tag, buildargs=args,
            labels=labels(t, commit), rm=True, forcerm=True, pull=False, nocache=opts.no_cache,
            network_mode="none" if wheels else None, decode=True)
        image_id = None
        for event in events:
            if "error" in event:
                raise ImageError(f"build of {t.name} failed: {event['error'].strip()[:300]}", fix=_hint(t, args, event))
            image_id = progress.build_event(event) or image_id
    return image_id or engine.image_attrs(t.tag)["Id"]


def _hint(t: Target, args: dict[str, str], event: dict) -> str:
    error = event["error"]
    if not any(w in error for w in ("pull access denied", "no such host", "manifest unknown", "registry",
                                    "repository does not exist")):
        return "read the build output above; fix the Dockerfile or lock and build again"
    base = args["BASE_IMAGE"]
    if t.spec.python == "3.11":
        return f"{base} is not in the local engine and no registry answers: make base-image, then --base kit/base:bookworm"
    return (f"{base} is not in the local engine and no registry answers: docker load it (docker save on a connected "
            f"host); the bootstrapped kit/base:bookworm has Python 3.11, and this image's locks are for {t.spec.python}")


def preflight(t: Target, base: str) -> None:
    """Refuse a local base whose Python differs from the one the image's locks were compiled for."""
    if not engine.has_image(base):
        return  # pulled at build time (or the build names it as missing)
    probe = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        out = engine.client().containers.run(base, ["python3", "-c", probe], remove=True, entrypoint=[])
    except Exception:  # no python3 in the base (CUDA bases): the Dockerfile installs the distro's
        return
    found = out.decode().strip()
    if found and found != t.spec.python:
        raise ConfigError(f"base {base} has Python {found}, but the locks of {t.name} are compiled for "
                          f"{t.spec.python} (containers/images.toml)",
                          fix=f"use a base with Python {t.spec.python}, or a variant of {t.name} made for this base")


def _drop_build_stages(image_id: str, seen: list[str], progress: Progress, *, bundle: bool = True) -> None:
    """Remove the build-stage images of this build (they hold the CA bundle, if one was given); keep the final chain.

    Last layer first, one image at a time (noprune): a layer this build took from the cache (the
    steps before the bundle was copied in) still has another build's layers as children, so Docker
    keeps it, and other images' build cache survives."""
    api = engine.client().api
    keep = {h["Id"].split(":")[-1][:12] for h in api.history(image_id) if h.get("Id", "<missing>") != "<missing>"}
    for short in reversed(seen):
        if short[:12] in keep:
            continue
        try:
            if api.inspect_image(short).get("RepoTags"):
                continue  # a base image (FROM), not a build-stage layer
            api.remove_image(short, force=False, noprune=True)
        except Exception:  # still a parent of a kept image, or already gone: harmless
            pass
    progress.line("removed the build-stage images" + (" (they held the CA bundle)" if bundle else ""))


def build(t: Target, opts: BuildOptions, lock_path: Path) -> BuiltImage:
    """Build the image, record it in the lock of built images, and return the record."""
    commit = kit_commit(t.root)
    started = datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    key = signing_key_for_tools()   # before the build: an unusable key is refused before an hour's work
    args = build_args(t, opts, commit)
    preflight(t, args["BASE_IMAGE"])
    progress = Progress(f"kit images build {t.name}" + (f" --variant {t.variant}" if t.variant else "")
                        + f" -> {t.tag}", quiet=opts.quiet)
    with host_lock(f"images-build-{t.tag}", f"build of {t.tag}", progress.line):
        image_id = _stream_build(t, opts, args, commit, progress)
    if opts.drop_build_stages or (opts.ca_bundle is not None and not opts.keep_build_stages):
        _drop_build_stages(image_id, progress.layers, progress, bundle=opts.ca_bundle is not None)
    attrs = engine.image_attrs(image_id)
    base = args["BASE_IMAGE"]
    base_id = engine.image_attrs(base)["Id"] if engine.has_image(base) else None
    record = BuiltImage(
        backend=t.name, tag=t.tag, image_id=image_id, repo_digest=(attrs.get("RepoDigests") or [None])[0],
        dockerfile_sha256=t.dockerfile_sha256(), lock_sha256=t.lock_sha256(),
        build_args={k: v for k, v in args.items() if k not in ("BASE_IMAGE", "KIT_COMMIT")}, base=base,
        kit_version=kit.__version__, kit_commit=commit,
        built_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        variant=t.variant, python=t.spec.python, cuda=t.spec.cuda, base_image_id=base_id,
        gpu_archs=code.flags() if (code := t.spec.cuda_code()) is not None else None,
        build_locks_sha256={p: input_sha256(t.path(p)) for p in t.spec.build_locks},
        offline=opts.wheelhouse is not None, ca_bundle=opts.ca_bundle is not None, size_bytes=attrs.get("Size"))

    def change(lock: ImagesLock) -> None:
        """Put the record in; keep the artifacts when the image is unchanged."""
        old = lock.images.get(t.name)
        if old is not None and old.image_id == image_id:
            record.artifacts.update(old.artifacts)  # same image: its SIF and sqsh still hold
        lock.images[t.name] = record

    update_lock(lock_path, change)
    said = write_attestation(build_attestation_path(lock_path, t.name),
                             build_statement(record, t.spec.dockerfile, t.spec.lock, started), key)
    progress.done(f"built {t.tag} {image_id[:19]} ({(attrs.get('Size') or 0) / 1e6:.0f} MB), recorded in {lock_path}; "
                  f"{said}")
    return record

