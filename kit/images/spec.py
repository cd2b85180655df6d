"""Which image a command acts on: images.toml resolved to one (backend, variant), its files,
their digests, and the kit commit to bake in."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kit.config.images import ImagesFile, ImageSpec, load_images
from kit.errors import ConfigError
from kit.files import file_sha256

DEFAULT_IMAGES_FILE = Path("containers") / "images.toml"


@dataclass(frozen=True)
class Target:
    """One image to build: its backend name, variant, resolved spec and repository root."""

    name: str
    variant: str | None
    spec: ImageSpec
    root: Path

    @property
    def tag(self) -> str:
        """The local tag of the built image."""
        return self.spec.tag or f"kit/{self.name}:{self.variant or 'latest'}"

    def path(self, rel: str) -> Path:
        """A repository-relative path of this image, made absolute."""
        return self.root / rel

    def lock_sha256(self) -> str:
        """sha256 of the runtime lock file."""
        return input_sha256(self.path(self.spec.lock))

    def dockerfile_sha256(self) -> str:
        """sha256 of the Dockerfile."""
        return input_sha256(self.path(self.spec.dockerfile))


def input_sha256(path: Path) -> str:
    """Hex sha256 of an image input (lock, Dockerfile); a missing file is a ConfigError naming it."""
    try:
        return file_sha256(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found", fix="run `make locks` for a lock, or fix the path in "
                          "containers/images.toml") from None


def repo_root(images_file: Path) -> Path:
    """The repository root of an images.toml: the folder above its `containers/` folder (an images file
    elsewhere is a ConfigError: its Dockerfiles and locks are named from that root)."""
    folder = Path(images_file).resolve().parent
    if folder.name != "containers":
        raise ConfigError(f"{images_file}: an images file outside a containers/ folder (the repository's root is the "
                          "folder above it, where its Dockerfiles are)", fix="pass the repository's "
                                                                            "containers/images.toml")
    return folder.parent


def load_file(images_file: Path = DEFAULT_IMAGES_FILE) -> ImagesFile:
    """The validated images.toml."""
    return load_images(Path(images_file))


def known_images_fix(images_file: Path, names: Iterable[str]) -> str:
    """The fix for an image name the file does not define: the names it does, or that it defines none."""
    known = sorted(names)
    if not known:
        return f"{images_file} defines no image: add an [image.NAME] table (see containers/images.toml)"
    return f"use one of {', '.join(known)}"


def target(name: str, variant: str | None = None, images_file: Path = DEFAULT_IMAGES_FILE) -> Target:
    """Resolve NAME (and an optional variant) to a Target; unknown names are ConfigErrors."""
    images = load_file(images_file)
    if name not in images.image:
        raise ConfigError(f"{images_file}: no image {name!r}", fix=known_images_fix(images_file, images.image))
    spec = images.image[name]
    if variant is not None and variant not in spec.variants:
        known = ", ".join(sorted(spec.variants)) or "none"
        raise ConfigError(f"{images_file}: image {name!r} has no variant {variant!r}",
                          fix=f"use one of: {known} (or leave --variant out)")
    return Target(name, variant, spec.with_variant(variant), repo_root(images_file))


def all_targets(images_file: Path = DEFAULT_IMAGES_FILE) -> list[Target]:
    """Every image and every variant in images.toml."""
    images = load_file(images_file)
    root = repo_root(images_file)
    out = []
    for name, spec in sorted(images.image.items()):
        out.append(Target(name, None, spec, root))
        out += [Target(name, v, spec.with_variant(v), root) for v in sorted(spec.variants)]
    return out


def kit_commit(root: Path) -> str:
    """The commit of the kit source being built (with -dirty when the tree has changes). A tree
    without git metadata (a release tarball, an exported copy) has none: KIT_COMMIT names it
    then, else it is "unknown"."""
    if not shutil.which("git") or not (root / ".git").exists():
        return os.environ.get("KIT_COMMIT") or "unknown"
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=40"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (subprocess.SubprocessError, OSError):
        return "unknown"
    return out or "unknown"
