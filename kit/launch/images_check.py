"""`kit run`'s images preflight: before anything is submitted, each job's image must be where its
runtime reads it. A SIF or sqsh must be in the site's `images` folder under the lock's file name with
the lock's size (one command on the frontend per site; `kit images push` hashes them there); a
docker-runtime site's engine must hold the image under its reference with the lock's image id (asked on
the frontend, the host that runs the jobs). Otherwise the run is refused with the command that puts the
image there. A dry run shows the check; it asks no remote frontend and no docker engine (a dry run
makes no ssh connection and starts no docker client), only a local images folder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kit.errors import KitError, SubmitError
from kit.launch.images_site import images_root, probe_images, push_command
from kit.launch.site import ResolvedSite

OK, MISSING, UNCHECKED = "ok", "missing", "unchecked"


@dataclass(frozen=True)
class ImageCheck:
    """One job image at one site: ok, missing (with why) or unchecked (with why)."""

    site: str
    backend: str
    image: str
    state: str
    detail: str

    def line(self) -> str:
        """One line for the plan."""
        return f"image of {self.backend} at {self.site}: {self.state}: {self.detail}"


@dataclass
class ImagesPreflight:
    """The images check of a whole `kit run`."""

    checks: list[ImageCheck] = field(default_factory=list)
    fix: str | None = None

    @property
    def missing(self) -> list[ImageCheck]:
        """The images that are not where their jobs read them."""
        return [c for c in self.checks if c.state == MISSING]

    def lines(self, site: str | None = None, backend: str | None = None) -> list[str]:
        """The check's lines (for one site and backend, or all)."""
        return [c.line() for c in self.checks
                if (site is None or c.site == site) and (backend is None or c.backend == backend)]

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"checks": [vars(c) for c in self.checks], "fix": self.fix}


def preflight_images(plan, *, dry_run: bool = False, sites_file: Path | None = None,
                     images_lock: Path | None = None) -> ImagesPreflight:
    """Check the image of every job of `plan` (a RunPlan) at its site. Without `dry_run` a missing or
    different image raises a SubmitError whose fix is the command that puts it there; a dry run
    returns the checks (the caller warns)."""
    from kit.images.built import load_lock
    from kit.launch.siteplan import NOT_BUILT, lock_path_of

    lock_path = lock_path_of(images_lock)
    lock = load_lock(lock_path)
    by_site: dict[str, tuple[ResolvedSite, dict[str, str]]] = {}
    for sp in plan.sites:
        ref = sp.image.ref
        if ref is None or NOT_BUILT in ref:
            continue   # the host runtime, or a dry run's placeholder (already warned)
        by_site.setdefault(sp.site.name, (sp.where, {}))[1].setdefault(sp.backend, ref)
    result = ImagesPreflight()
    for resolved, images in by_site.values():
        result.checks += check_site_images(resolved, images, lock, dry_run=dry_run)
    missing = result.missing
    if not missing:
        return result
    fixes = []
    for site in dict.fromkeys(c.site for c in missing):
        files = [c for c in missing if c.site == site]
        if by_site[site][0].config.runtime == "docker":
            fixes += [f"kit images build {c.backend} (make image-{c.backend}) on the host that runs the jobs, or "
                      f"docker load -i the archive of `kit images save {c.backend}` there" for c in files]
        else:
            fixes.append(push_command(site, [c.backend for c in files], sites_file=sites_file,
                                      lock_file=images_lock))
    result.fix = " && ".join(fixes)
    if dry_run:
        return result
    summary = "; ".join(f"{c.backend} at {c.site}: {c.detail}" for c in missing[:4]) + (
        f" (and {len(missing) - 4} more)" if len(missing) > 4 else "")
    raise SubmitError(f"images are not where the jobs read them, nothing was submitted: {summary}", fix=result.fix)


def check_site_images(resolved: ResolvedSite, images: dict[str, str], lock, *, dry_run: bool) -> list[ImageCheck]:
    """The checks of one site's job images (backend -> the reference its jobs run)."""
    site = resolved.config
    if site.runtime == "docker":
        if dry_run:  # a dry run starts no docker client: the engine is asked before submitting
            return [ImageCheck(site.name, backend, ref, UNCHECKED, f"checked in the docker engine of "
                               f"{resolved.frontend.where} before submitting: {ref}, {_id_text(lock, backend)}")
                    for backend, ref in images.items()]
        return [_docker_check(resolved, backend, ref, lock) for backend, ref in images.items()]
    root = images_root(resolved)
    if dry_run and site.is_remote:
        return [ImageCheck(site.name, backend, ref, UNCHECKED,
                           f"checked on {site.frontend} before submitting: {ref}, {_size_text(lock, backend, ref)}")
                for backend, ref in images.items()]
    there = probe_images(resolved.frontend, root)
    out = []
    for backend, ref in images.items():
        file = PurePosixPath(ref).name
        expected = _expected_bytes(lock, backend, file)
        have = there.files.get(file)
        if have is None:
            problem = f"{ref} is not there" + (f" (a partial copy of {there.parts[file]} bytes is)"
                                               if file in there.parts else "")
        elif expected is not None and have != expected:
            problem = f"{ref} has {have} bytes, the lock records {expected} (a half copy or another build)"
        else:
            problem = None
        detail = problem or f"{ref}, {have} bytes" + ("" if expected is not None else " (the lock records no size)")
        out.append(ImageCheck(site.name, backend, ref, MISSING if problem else OK, detail))
    return out


def _expected_bytes(lock, backend: str, file: str) -> int | None:
    """The size the lock records for this artifact file of the backend (None when it records none)."""
    built = lock.images.get(backend)
    for art in (built.artifacts.values() if built else ()):
        if art.file == file:
            return art.bytes
    return None


def _size_text(lock, backend: str, ref: str) -> str:
    size = _expected_bytes(lock, backend, PurePosixPath(ref).name)
    return f"{size} bytes" if size is not None else "its size unrecorded"


def _id_text(lock, backend: str) -> str:
    built = lock.images.get(backend)
    return f"image {built.image_id[:19]}" if built else "its image id unrecorded"


def _docker_check(resolved: ResolvedSite, backend: str, ref: str, lock) -> ImageCheck:
    """The docker image the jobs run, asked of the engine on the site's frontend."""
    built = lock.images.get(backend)
    expected = built.image_id if built else None
    try:
        res = resolved.frontend.run(["docker", "image", "inspect", "--format", "{{.Id}}", ref],
                                    env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    except KitError as exc:
        return ImageCheck(resolved.name, backend, ref, MISSING, f"docker could not be asked: {exc.message}")
    seen = res.stdout.strip()
    if res.returncode == 127:
        return ImageCheck(resolved.name, backend, ref, MISSING, f"docker is not installed on {resolved.frontend.where}, "
                          "the host that runs this site's jobs")
    if res.returncode != 0 or not seen:
        return ImageCheck(resolved.name, backend, ref, MISSING, f"{ref} is not in the docker engine of "
                          f"{resolved.frontend.where}")
    if expected and seen != expected:
        return ImageCheck(resolved.name, backend, ref, MISSING, f"{ref} is image {seen[:19]}, the lock records "
                          f"{expected[:19]} (another build under that tag)")
    return ImageCheck(resolved.name, backend, ref, OK, f"{ref} is image {seen[:19]}")
