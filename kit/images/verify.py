"""`kit images verify`: the OCI image, its SIF and its sqsh hold the same files.

Each artifact's digest tree is compared with the image's. Only runtime metadata is ignored,
each rule with its reason (RULES); every other difference is reported by path and fails."""

from __future__ import annotations

import fnmatch
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kit.errors import ImageError
from kit.files import file_sha256
from kit.images import engine
from kit.images.artifact_trees import oci_tree, sif_tree, squashfs_tree
from kit.images.built import BuiltImage
from kit.images.digest_tree import Difference, Entry, compare

EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@dataclass(frozen=True)
class Rule:
    """Paths of one artifact form that may differ from the image, and why."""

    form: str
    patterns: tuple[str, ...]
    reason: str
    only_empty: bool = False       # ignored only while the artifact's file is empty
    only_link_to: str | None = None  # ignored only while the artifact's entry is a symlink there

    def covers(self, d: Difference) -> bool:
        """Whether this rule explains the difference."""
        if not any(fnmatch.fnmatchcase(d.path, p) for p in self.patterns):
            return False
        mine = d.right
        if self.only_empty:
            return mine is not None and mine.kind == "file" and mine.content == EMPTY
        if self.only_link_to is not None:
            return mine is not None and mine.kind == "symlink" and mine.content.startswith(self.only_link_to)
        return True


RULES = (
    Rule("sif", (".singularity.d", ".singularity.d/*"),
         "Apptainer's metadata folder (environment scripts, runscript, labels), made from the image config"),
    Rule("sif", (".exec", ".run", ".shell", ".test", "environment", "singularity"),
         "Apptainer's compatibility links into /.singularity.d", only_link_to=".singularity.d/"),
    Rule("sif", ("etc/hosts", "etc/resolv.conf"),
         "empty mount points Apptainer creates; it binds the host's files there at run time", only_empty=True),
    Rule("sqsh", ("etc/rc", "etc/rc.local", "etc/environment", "etc/fstab"),
         "Enroot's image-format files, derived from the image config (entry point, Env, volumes)"),
    Rule("sqsh", ("dev/*",), "Enroot drops /dev's contents on import and mounts its own /dev at run time"),
    Rule("sqsh", ("etc/hostname", "etc/hosts", "etc/resolv.conf", ".dockerenv"),
         "docker export's empty mount points (Docker's init layer); runtimes bind the host's files there",
         only_empty=True),
    Rule("sqsh", ("etc/mtab",), "docker export's init-layer link to /proc/mounts", only_link_to="/proc/mounts"),
)
# Owners are compared for the SIF only: an Enroot image is all-root by design (mksquashfs
# -all-root, as `enroot import` does), since Enroot maps the calling user to root.
OWNERS = {"sif": True, "sqsh": False}


@dataclass
class FormReport:
    """The comparison of one artifact with the image."""

    form: str
    file: str
    entries: int
    differences: list[Difference] = field(default_factory=list)
    ignored: Counter = field(default_factory=Counter)


def check(form: str, image: dict[str, Entry], other: dict[str, Entry], file: str) -> FormReport:
    """Compare an artifact's tree with the image's, applying the ignore rules of its form."""
    report = FormReport(form, file, len(other))
    for d in compare(image, other, owners=OWNERS[form]):
        rule = next((r for r in RULES if r.form == form and r.covers(d)), None)
        if rule is None:
            report.differences.append(d)
        else:
            report.ignored[rule.reason] += 1
    return report


def forms_to_verify(built: BuiltImage, to: str) -> tuple[str, ...]:
    """--to sif|sqsh|all|recorded -> the artifact forms to verify: `recorded` is those the lock records for
    the image (a site that runs Apptainer only converts to SIF), an ImageError when it records none."""
    if to != "recorded":
        return ("sif", "sqsh") if to == "all" else (to,)
    forms = tuple(form for form in ("sif", "sqsh") if form in built.artifacts)
    if not forms:
        raise ImageError(f"image {built.backend} ({built.image_id[:19]}) has no sif or sqsh artifact to verify",
                         fix=f"kit images convert {built.backend} --to sif (or sqsh, or all)")
    return forms


def verify(built: BuiltImage, folder: Path, forms: tuple[str, ...] = ("sif", "sqsh"),
           progress=lambda msg: None) -> list[FormReport]:
    """Check each artifact's sha256 against the lock, then compare its files with the image."""
    paths = {}
    for form in forms:
        art = built.artifact(form)
        path = Path(folder) / art.file
        if not path.is_file():
            raise ImageError(f"{path}: {form} artifact not found", fix=f"kit images convert {built.backend} --to {form}")
        if art.image_id and art.image_id != built.image_id:
            raise ImageError(f"{path} was made from {art.image_id[:19]}, not the built {built.image_id[:19]}",
                             fix=f"kit images convert {built.backend} --to {form}")
        if file_sha256(path) != art.sha256:
            raise ImageError(f"{path}: sha256 differs from the lock's {art.sha256[:16]}",
                             fix=f"kit images convert {built.backend} --to {form}")
        paths[form] = path
    with tempfile.TemporaryDirectory(prefix="kit-verify-") as tmp:
        progress(f"docker save {built.image_id[:19]}")
        image, _ = oci_tree(engine.save(built.image_id, Path(tmp) / "image.tar"))
    reports = []
    for form, path in paths.items():
        progress(f"reading {path.name}")
        tree = sif_tree(path) if form == "sif" else squashfs_tree(path)
        reports.append(check(form, image, tree, path.name))
    return reports
