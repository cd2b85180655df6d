"""containers/images.toml: how each backend image is built."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kit.config.backends import BACKENDS
from kit.config.loading import load_model


class ImageSpec(BaseModel):
    """One backend image: its Dockerfile, lock file, build arguments and base."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dockerfile: str
    lock: str
    context: str = "."
    build_args: dict[str, str] = Field(default_factory=dict)
    base: str = Field(description="BASE_IMAGE: an upstream image pinned by digest, or a local bootstrapped base")
    python: str = "3.11"
    cuda: str | None = None
    tag: str | None = None


class ImagesFile(BaseModel):
    """The whole images.toml: one [image.BACKEND] table per backend."""

    model_config = ConfigDict(extra="forbid")

    image: dict[str, ImageSpec] = Field(default_factory=dict)

    @field_validator("image")
    @classmethod
    def _known(cls, v: dict[str, ImageSpec]) -> dict[str, ImageSpec]:
        for name in v:
            if name not in BACKENDS:
                raise ValueError(f"image {name!r} names no backend ; fix: use one of {', '.join(BACKENDS)}")
        return v


def load_images(path: Path) -> ImagesFile:
    """Load and validate images.toml."""
    return load_model(ImagesFile, Path(path), "images")
