"""containers/images.toml, the Dockerfiles and the lock files: every image is complete and
follows the rules (hashed locks, GPU variables, explicit CUDA arch list, kit installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kit.config.backends import BACKENDS
from kit.config.images import ImageSpec
from kit.errors import ConfigError
from kit.images import spec
from kit.images.wheelhouse import lock_hashes

REPO = Path(__file__).resolve().parents[2]

IMAGES = REPO / "containers" / "images.toml"


def targets():
    return spec.all_targets(IMAGES)


def test_every_backend_has_an_image_with_its_files():
    names = {t.name for t in targets()}
    assert names == set(BACKENDS)
    for t in targets():
        for rel in (t.spec.dockerfile, *t.spec.locks()):
            assert t.path(rel).is_file(), rel
            assert t.path(rel).with_suffix(".in").is_file() or rel == t.spec.dockerfile, rel
    assert (REPO / "Dockerfile.vllm").is_file() and (REPO / "Dockerfile.gguf").is_file()


@pytest.mark.parametrize("t", targets(), ids=lambda t: f"{t.name}:{t.variant or 'default'}")
def test_every_lock_pins_every_package_with_hashes(t):
    for lock in t.spec.locks():
        pins = lock_hashes(t.path(lock))
        assert pins, lock
        for req, hashes in pins.items():
            assert hashes, f"{lock}: {req} has no --hash"
            assert "==" in req
        text = t.path(lock).read_text()
        assert "make locks" in text.splitlines()[1]  # the documented regeneration command (or why not)
        assert "/opt/" not in text and "file://" not in text  # no machine paths leak into locks


@pytest.mark.parametrize("t", targets(), ids=lambda t: f"{t.name}:{t.variant or 'default'}")
def test_dockerfile_rules(t):
    text = t.path(t.spec.dockerfile).read_text()
    # a Dockerfile of a variant alone (gguf's cpu, cuda and cuda11) builds on the local bootstrapped base, which has
    # no digest
    own = t.variant in ("cpu", "cuda", "cuda11") and t.spec.dockerfile.endswith(f".{t.variant}")
    assert re.search(r"^ARG BASE_IMAGE=\S+@sha256:[0-9a-f]{64}$", text, re.M) or (
        own and re.search(r"^ARG BASE_IMAGE=kit/base:bookworm$", text, re.M)), "base pinned by digest"
    assert "NVIDIA_VISIBLE_DEVICES=all" in text and "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text
    assert "--require-hashes" in text
    # kit itself, with the commit baked where provenance reads it
    assert "--no-deps --no-index" in text and "_commit.txt" in text and '"$KIT_COMMIT"' in text
    assert "native" not in re.sub(r"#.*", "", text).replace('!= native', "")
    # the CA bundle and wheelhouse stay in a build stage: the final stage copies the venv only
    final = text.rsplit("\nFROM ", 1)[1]
    assert "kit-build" not in final and "COPY --from=" in final


def test_cuda_images_pin_cuda_and_gguf_lists_volta_to_hopper():
    by_name = {t.name: t for t in targets() if t.variant is None}
    for t in by_name.values():
        assert t.spec.cuda, t.name
        assert "@sha256:" in t.spec.base, t.name
    gguf = by_name["gguf"].spec
    arch = gguf.build_args["CMAKE_CUDA_ARCHITECTURES"].split(";")
    assert arch[0] == "70" and arch[-1] == "90" and "native" not in arch
    assert "-DGGML_CUDA=on" in (REPO / "Dockerfile.gguf").read_text()


def test_cpu_variant_swaps_lock_base_and_cuda():
    t = spec.target("transformers-5.17", "cpu", IMAGES)
    assert t.spec.lock.endswith("requirements-cpu.lock") and t.spec.base == "kit/base:bookworm"
    assert t.spec.cuda is None and t.spec.python == "3.11" and t.spec.build_args["TORCH_VARIANT"] == "cpu"
    assert any(r.startswith("torch==") and r.endswith("+cpu") for r in lock_hashes(t.path(t.spec.lock)))
    default = spec.target("transformers-5.17", None, IMAGES)
    assert default.spec.build_args["TORCH_VARIANT"] == "cuda" and default.tag != t.tag


@pytest.mark.parametrize("name", ["transformers-5.17", "gguf", "vllm"])
def test_cuda_variants_build_on_the_bootstrapped_base_with_pypis_cuda_wheels(name):
    t = spec.target(name, "cuda", IMAGES)
    assert t.spec.base == "kit/base:bookworm" and t.spec.python == "3.11" and t.spec.cuda == "13.0"
    assert t.tag.endswith("-cu130-bookworm") and t.tag != spec.target(name, None, IMAGES).tag
    pins = {r.split("==")[0]: r.split("==")[1] for r in lock_hashes(t.path(t.spec.lock))}
    assert pins["nvidia-cuda-runtime"].startswith("13.0.")   # cudart of CUDA 13.0 in the final image
    if name == "transformers-5.17":
        assert pins["torch"] == "2.14.1" and t.spec.build_args["TORCH_VARIANT"] == "cuda-bookworm"
    if name == "vllm":   # vLLM's own torch pin; no compiler in the image (runs set enforce_eager)
        assert pins["vllm"] == "0.33.0" and pins["torch"] == "2.14.0" and t.spec.build_args["RUNTIME_CC"] == "0"


def test_gguf_cuda_compiles_in_a_build_stage_for_an_explicit_list():
    t = spec.target("gguf", "cuda", IMAGES)
    assert t.spec.build_args["CMAKE_CUDA_ARCHITECTURES"] == "90"   # the proof build: Hopper alone (2 cores)
    assert t.spec.build_args["BUILD_IMAGE"] == "kit/base:bookworm-build"
    text = t.path(t.spec.dockerfile).read_text()
    assert "-DGGML_CUDA=on" in text and "-DGGML_CUDA_NO_VMM=on" in text
    assert 'ARG CMAKE_CUDA_ARCHITECTURES="75;80;86;89;90"' in text   # CUDA 13 has no Volta (70)
    # the compiler lives in the build stage's base only; the final stage starts from the plain base
    assert re.search(r"^FROM \$\{BUILD_IMAGE\} AS build$", text, re.M)
    assert text.rsplit("\nFROM ", 1)[1].startswith("${BASE_IMAGE}\n")
    toolkit = {r.split("==")[0] for r in lock_hashes(t.path("containers/gguf/cuda-toolkit.lock"))}
    assert {"nvidia-cuda-nvcc", "nvidia-cuda-cccl", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cublas"} <= toolkit


def test_gguf_cuda11_compiles_volta_with_debians_cuda_11_8():
    t = spec.target("gguf", "cuda11", IMAGES)
    assert t.tag == "kit/gguf:0.3.36-cu118-bookworm" and t.tag != spec.target("gguf", "cuda", IMAGES).tag
    assert t.spec.cuda == "11.8" and t.spec.base == "kit/base:bookworm" and t.spec.python == "3.11"
    assert t.spec.dockerfile == "containers/gguf/Dockerfile.cuda11"
    # a Dockerfile of its own: only its own build arguments (the image's devel base never leaks in)
    assert t.spec.build_args == {"BUILD_IMAGE": "kit/base:bookworm-cuda11-build", "CMAKE_CUDA_ARCHITECTURES": "70"}
    assert t.spec.cuda_code().flags() == "sm_70 compute_70"   # Volta, which the cuda variant (CUDA 13) cannot serve
    assert t.spec.build_locks == ["containers/gguf/build-tools.lock", "containers/gguf/llama-cpp-python.lock"]
    pins = lock_hashes(t.path(t.spec.lock))
    # CUDA 11.8's cudart and cuBLAS as PyPI's cu11 wheels, hash-pinned; nothing of CUDA 13 beside them
    for req in ("nvidia-cuda-runtime-cu11==11.8.89", "nvidia-cublas-cu11==11.11.3.6"):
        assert pins.get(req), req
    assert not any(r.startswith(("nvidia-cuda-runtime==", "nvidia-cublas==")) for r in pins)
    assert not any(r.startswith("llama-cpp-python==") for r in pins)   # compiled in the build stage
    assert t.spec.compile_args[t.spec.lock] == ["--no-emit-package", "llama-cpp-python", "{cuda_wheels}"]
    text = t.path(t.spec.dockerfile).read_text()
    assert "-DGGML_CUDA=on" in text and "-DGGML_CUDA_NO_VMM=on" in text and "-DGGML_NATIVE=off" in text
    assert "-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-11" in text   # nvcc 11.8 takes gcc <= 11
    assert 'ARG CMAKE_CUDA_ARCHITECTURES="70;75;80;86;89;90"' in text   # the release list: Volta to Hopper
    assert re.search(r"^FROM \$\{BUILD_IMAGE\} AS build$", text, re.M)
    assert re.search(r"^ARG BUILD_IMAGE=kit/base:bookworm-cuda11-build$", text, re.M)
    final = text.rsplit("\nFROM ", 1)[1]
    assert final.startswith("${BASE_IMAGE}\n") and 'LABEL org.kit.cuda-architectures="${CMAKE_CUDA_ARCHITECTURES}"' in final
    for lib in ("libcudart.so.11.0", "libcublas.so.11", "libcublasLt.so.11"):   # linked beside llama.cpp's libraries
        assert lib in text
    assert (REPO / "scripts" / "images" / "build-base-cuda11.sh").is_file()


def test_gliner2_runs_transformers_4():
    t = spec.target("gliner2", None, IMAGES)
    pins = lock_hashes(t.path(t.spec.lock))
    assert any(r.startswith("transformers==4.") for r in pins)
    assert any(r.startswith("gliner2==") for r in pins)


@pytest.mark.parametrize("field,value,words", [
    ("build_args", {"CMAKE_CUDA_ARCHITECTURES": "native"}, ["native", "70"]),
    ("dockerfile", "/abs/Dockerfile", ["relative", "/abs/Dockerfile"]),
    ("python", "3", ["3", "python"]),
])
def test_bad_image_fields_are_config_errors(tmp_path, field, value, words):
    import tomllib

    data = tomllib.loads(IMAGES.read_text())
    data["image"]["gguf"][field] = value
    with pytest.raises(Exception) as exc:
        ImageSpec.model_validate(data["image"]["gguf"])
    for w in words:
        assert w in str(exc.value)


def test_unknown_image_or_variant_names_the_choices():
    with pytest.raises(ConfigError) as exc:
        spec.target("sglang", None, IMAGES)
    assert "sglang" in exc.value.one_line() and "gguf" in exc.value.one_line()
    with pytest.raises(ConfigError) as exc:
        spec.target("gguf", "rocm", IMAGES)
    assert "'rocm'" in exc.value.one_line() and "cpu" in exc.value.one_line()


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_image_has_a_cpu_variant_on_the_bootstrapped_base(name):
    t = spec.target(name, "cpu", IMAGES)
    # kit/base:bookworm, or it plus a Debian library (vllm: kit/base:bookworm-numa, scripts/images/base-plus.sh)
    assert t.spec.base.startswith("kit/base:bookworm") and t.spec.python == "3.11" and t.spec.cuda is None
    assert t.tag.endswith("-cpu") and t.tag != spec.target(name, None, IMAGES).tag
    pins = lock_hashes(t.path(t.spec.lock))
    assert all(not r.startswith("torch==") or r.endswith("+cpu") for r in pins), name
    assert not any(r.startswith(("nvidia-", "vllm==")) for r in pins), name   # nothing CUDA in a CPU lock
    if t.spec.dockerfile != spec.target(name, None, IMAGES).spec.dockerfile:   # gguf: its own Dockerfile and args
        assert "CMAKE_CUDA_ARCHITECTURES" not in t.spec.build_args and "BUILD_IMAGE" not in t.spec.build_args


def test_a_variant_without_a_tag_never_takes_its_images_tag(tmp_path):
    from kit.config.images import ImageSpec

    spec = ImageSpec.model_validate({"dockerfile": "Dockerfile.x", "lock": "x.lock", "base": "kit/base:bookworm",
                                     "python": "3.11", "tag": "kit/x:1.0-cu130",
                                     "variants": {"cpu": {"cuda": ""}, "own": {"tag": "kit/x:own"}}})
    assert spec.with_variant("cpu").tag == "kit/x:1.0-cu130-cpu"
    assert spec.with_variant("own").tag == "kit/x:own" and spec.with_variant(None).tag == "kit/x:1.0-cu130"
    bare = ImageSpec.model_validate({"dockerfile": "Dockerfile.x", "lock": "x.lock", "base": "kit/base:bookworm",
                                     "python": "3.11", "tag": "registry:5000/kit-x", "variants": {"cpu": {"cuda": ""}}})
    assert bare.with_variant("cpu").tag == "registry:5000/kit-x:cpu"   # a registry port is not a tag
