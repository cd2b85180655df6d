"""`kit images convert`: make the SIF and/or sqsh of a built image and record each artifact's
sha256 next to the image id in the lock of built images."""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path

from kit.errors import ConfigError, ImageError
from kit.files import file_sha256
from kit.images import engine
from kit.images.attest import artifact_attestation_path, artifact_statement, write_attestation
from kit.images.built import Artifact, BuiltImage, ImagesLock, update_lock
from kit.images.progress import Progress
from kit.images.sif import build_sif, compression_args
from kit.images.sqsh import build_sqsh
from kit.signing import signing_key_for_tools

FORMS = ("sif", "sqsh")


def forms_of(to: str) -> tuple[str, ...]:
    """--to sif|sqsh|tar|all -> the forms to make (all: sif and sqsh; tar: the docker archive that
    `docker load` reads on a host with no registry)."""
    if to == "all":
        return FORMS
    if to not in (*FORMS, "tar"):
        raise ConfigError(f"--to {to!r} is not a known artifact form", fix="use sif, sqsh, tar or all")
    return (to,)


def artifact_name(built: BuiltImage, form: str) -> str:
    """kit-<backend>[-<variant>]-<12 hex of the image id>.<form>"""
    variant = f"-{built.variant}" if built.variant else ""
    return f"kit-{built.backend}{variant}-{built.image_id.split(':')[-1][:12]}.{form}"


def _make(built: BuiltImage, form: str, dest: Path, progress: Progress) -> str:
    if form == "sqsh":
        return build_sqsh(built.image_id, dest)
    if form == "tar":
        # by tag when the tag still names this image, so `docker load` restores the tag too
        tagged = engine.has_image(built.tag) and engine.image_attrs(built.tag)["Id"] == built.image_id
        engine.save(built.tag if tagged else built.image_id, dest)
        return f"docker save {built.tag if tagged else '(by id)'} (load with: docker load -i FILE)"
    compression_args()   # a bad KIT_SIF_COMPRESSION is refused before minutes of docker save
    with tempfile.TemporaryDirectory(prefix=".kit-archive-", dir=dest.parent) as tmp:
        progress.line(f"docker save {built.image_id[:19]}")
        archive = engine.save(built.image_id, Path(tmp) / "image.tar")
        progress.line(f"apptainer build {dest.name} docker-archive://{archive.name} ({archive.stat().st_size / 1e6:.0f} MB)")
        return build_sif(archive, dest)


def up_to_date(built: BuiltImage, form: str, dest: Path) -> bool:
    """True when the lock records `form` of this very image at dest and the file there still has the
    recorded sha256 (converting again would only make the same artifact)."""
    art = built.artifacts.get(form)
    return (art is not None and art.image_id == built.image_id and art.file == dest.name and dest.is_file()
            and file_sha256(dest) == art.sha256)


def convert(built: BuiltImage, forms: tuple[str, ...], out_dir: Path, lock_path: Path,
            quiet: bool = False, force: bool = False) -> dict[str, Artifact]:
    """Make each artifact form in out_dir (unless it is up to date and not forced), record it in the
    lock, and return the records."""
    engine.image_attrs(built.image_id)  # fails early, naming the fix, if the image is gone
    key = signing_key_for_tools()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    made: dict[str, Artifact] = {}
    for form in forms:
        dest = out_dir / artifact_name(built, form)
        progress = Progress(f"kit images convert {built.backend} --to {form} -> {dest}", quiet=quiet)
        if not force and up_to_date(built, form, dest):
            made[form] = built.artifacts[form]
            progress.done(f"{dest.name} is up to date: made from {built.image_id[:19]}, sha256 "
                          f"{made[form].sha256[:16]} as recorded (--force converts again)")
            continue
        tool = _make(built, form, dest, progress)
        if not dest.is_file():
            raise ImageError(f"{form} conversion left no file at {dest}", fix="read the output above")
        made[form] = Artifact(file=dest.name, sha256=file_sha256(dest), bytes=dest.stat().st_size,
                              made_at=datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
                              image_id=built.image_id, tool=tool)
        said = write_attestation(artifact_attestation_path(dest), artifact_statement(built, form, made[form], dest), key)
        # recorded as soon as it is made: a later form's failure (no mksquashfs) leaves none unrecorded
        _record(built, lock_path, form, made[form])
        progress.done(f"{dest.name} sha256 {made[form].sha256[:16]} ({made[form].bytes / 1e6:.0f} MB); {said}")
    return made


def _record(built: BuiltImage, lock_path: Path, form: str, artifact: Artifact) -> None:
    """Write one artifact into the lock, unless the image was rebuilt meanwhile."""

    def change(lock: ImagesLock) -> None:
        current = lock.get(built.backend, lock_path)
        if current.image_id != built.image_id:
            raise ImageError(f"{lock_path}: {built.backend} was rebuilt during the conversion",
                             fix=f"kit images convert {built.backend} again")
        current.artifacts[form] = artifact

    update_lock(lock_path, change)
