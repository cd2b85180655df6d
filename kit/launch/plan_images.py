"""Which built image each run of a plan uses at a site, for `kit plan --site`: the image
kit.launch.siteplan.resolve_image would give its jobs, or a refusal naming the build command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit.config.roster import Run
from kit.config.sites import Site
from kit.errors import ImageError, NoImageError
from kit.launch.site import ResolvedSite

_ARTIFACT = {"docker": "oci", "apptainer": "sif"}


@dataclass(frozen=True)
class RunImage:
    """The image one run's jobs use at a site: the runtime's reference and the recorded digest."""

    run: str
    backend: str
    ref: str | None
    digest: str | None
    artifact: str | None

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"run": self.run, "backend": self.backend, "image": self.ref, "digest": self.digest,
                "artifact": self.artifact}


def build_command(backend: str, site: Site, images_file: Path | None = None) -> str:
    """How to build a backend's image for a site: with --variant cpu where the site has no GPU and
    images.toml has that variant, plus the conversion its runtime reads."""
    variant = None
    if site.gpus_per_node == 0:
        import kit
        from kit.images.spec import DEFAULT_IMAGES_FILE, load_file

        here = [images_file] if images_file else [DEFAULT_IMAGES_FILE, Path(kit.__file__).parents[1] / DEFAULT_IMAGES_FILE]
        found = next((p for p in here if Path(p).is_file()), None)
        try:
            spec = load_file(found).image.get(backend) if found else None
        except Exception:  # an images.toml that does not load: the plain command
            spec = None
        variant = "cpu" if spec is not None and "cpu" in spec.variants else None
    if variant:
        cmd = f"kit images build {backend} --variant cpu --wheelhouse DIR (scripts/images/cpu-images.sh {backend})"
    else:
        cmd = f"kit images build {backend} (make image-{backend})"
    kind = _ARTIFACT.get(site.runtime, "sqsh")
    return cmd if kind == "oci" else f"{cmd}, then kit images convert {backend} --to {kind}"


def run_images(resolved: ResolvedSite, runs: list[Run], images_lock: Path | None = None) -> list[RunImage]:
    """The image each run uses at the site (none on the host runtime); a NoImageError (exit 2)
    naming the backend and its build command when one has no built image for the runtime."""
    from kit.launch.siteplan import resolve_image

    site, out = resolved.config, []
    for run in runs:
        try:
            chosen = resolve_image(resolved, run.backend, images_lock)
        except ImageError as exc:
            built = bool(exc.fix and exc.fix.startswith("kit images convert"))  # built, not converted yet
            raise NoImageError(f"run {run.name}: backend {run.backend} has no built image for site {site.name}'s "
                               f"runtime {site.runtime} ({exc.message})",
                               fix=exc.fix if built else build_command(run.backend, site)) from None
        out.append(RunImage(run.name, run.backend, chosen.ref, chosen.env.get("KIT_IMAGE_DIGEST"),
                            chosen.env.get("KIT_IMAGE_ARTIFACT")))
    return out
