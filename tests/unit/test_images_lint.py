"""`kit images lint` checks on synthetic facts: each one fails on the defect it names."""

from __future__ import annotations

from pathlib import Path

import kit
from kit.images import lint, spec
from kit.images.built import BuiltImage

REPO = Path(__file__).resolve().parents[2]
GOOD_ENV = ["PATH=/opt/venv/bin:/usr/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"]


def facts(**change) -> lint.Facts:
    t = spec.target("gguf", None, REPO / "containers/images.toml")
    built = BuiltImage(backend="gguf", tag="kit/gguf:x", image_id="sha256:" + "1" * 64, dockerfile_sha256="d",
                       lock_sha256="L", build_args=dict(t.spec.build_args), base="b", kit_version=kit.__version__,
                       kit_commit="abc", built_at="now")
    labels = {lint.ARCH_LABEL: t.spec.build_args["CMAKE_CUDA_ARCHITECTURES"]}
    base = dict(target=t, built=built, config={"Env": GOOD_ENV, "Labels": labels}, history=["/bin/sh -c pip install"],
                dockerfile=t.path(t.spec.dockerfile).read_text(),
                probe={"kit_version": kit.__version__, "kit_file": "/opt/venv/x", "commit": "abc", "lock_sha256": "L",
                       "build_inputs_left": False, "modules": {"llama_cpp": "ok"}, "torch_cuda": "absent"},
                entry=(0, f"kit, version {kit.__version__}\n"),
                libraries={"prefix": "/opt/venv", "files": 12, "missing": {"libcuda.so.1": ["/opt/venv/llama.so"]}})
    base.update(change)
    return lint.Facts(**base)


def verdicts(f: lint.Facts) -> dict[str, bool]:
    return {c(f).check: c(f).ok for c in lint.CHECKS}


def test_a_good_image_passes_every_check():
    assert all(verdicts(facts()).values()), verdicts(facts())


def test_each_defect_fails_its_check():
    bad = {
        "gpu-env": facts(config={**facts().config, "Env": ["NVIDIA_VISIBLE_DEVICES=void"]}),
        "kit-import": facts(probe={**facts().probe, "kit_version": "0.0.1"}),
        "entry-point": facts(entry=(127, "kit: not found")),
        "kit-commit": facts(probe={**facts().probe, "commit": None}),
        "lock": facts(probe={**facts().probe, "lock_sha256": "other"}),
        "no-build-inputs": facts(probe={**facts().probe, "build_inputs_left": True}),
        "engine": facts(probe={**facts().probe, "modules": {"llama_cpp": "ImportError: libcuda.so.1"}}),
        "libraries": facts(libraries={"prefix": "/opt/venv", "files": 12,
                                      "missing": {"libcublas.so.12": ["/opt/venv/lib/libggml-cuda.so"]}}),
        "torch-cuda": facts(probe={**facts().probe, "torch_cuda": "13.0"}),   # the image declares CUDA 12.8
        "cuda-arch": facts(config={"Env": GOOD_ENV}),                          # the list is not recorded
    }
    for check, f in bad.items():
        v = verdicts(f)
        assert not v[check], check
        assert sum(not ok for ok in v.values()) == 1, (check, v)


def test_native_or_missing_cuda_arch_fails():
    f = facts()
    for text in ("-DCMAKE_CUDA_ARCHITECTURES=native", "CMAKE_CUDA_ARCHITECTURES=all", "GGML_NATIVE=ON"):
        assert not lint.check_cuda_arch(facts(history=[f"/bin/sh -c cmake {text}"])).ok, text
    built = f.built.model_copy(update={"build_args": {}})
    assert not lint.check_cuda_arch(facts(built=built)).ok  # the gguf Dockerfile compiles CUDA: a list is required
    assert lint.check_cuda_arch(f).detail == ("explicit list 70;75;80;86;89;90, recorded in the image's "
                                              "org.kit.cuda-architectures label")


def test_torch_cuda_must_match_the_declared_cuda():
    cpu = spec.target("transformers-5.17", "cpu", REPO / "containers/images.toml")
    assert lint.check_torch_cuda(facts(target=cpu, probe={**facts().probe, "torch_cuda": None})).ok
    assert not lint.check_torch_cuda(facts(target=cpu, probe={**facts().probe, "torch_cuda": "13.0"})).ok
    cuda = spec.target("transformers-5.17", None, REPO / "containers/images.toml")
    assert lint.check_torch_cuda(facts(target=cuda, probe={**facts().probe, "torch_cuda": "13.0"})).ok
    assert not lint.check_torch_cuda(facts(target=cuda, probe={**facts().probe, "torch_cuda": None})).ok
