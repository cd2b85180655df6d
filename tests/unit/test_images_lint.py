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
                       kit_commit="abc", built_at="now", gpu_archs=t.spec.cuda_code().flags())
    labels = {lint.ARCH_LABEL: t.spec.build_args["CMAKE_CUDA_ARCHITECTURES"],
              lint.GPU_ARCHS_LABEL: t.spec.cuda_code().flags()}
    base = dict(target=t, built=built, config={"Env": GOOD_ENV, "Labels": labels}, history=["/bin/sh -c pip install"],
                dockerfile=t.path(t.spec.dockerfile).read_text(),
                probe={"kit_version": kit.__version__, "kit_file": "/opt/venv/x", "commit": "abc", "lock_sha256": "L",
                       "build_inputs_left": False, "modules": {"llama_cpp": "ok"}, "torch_cuda": "absent",
                       "cuda": {"llama_cpp CUDA backend": "ok: CUDA : ARCHS = 700,750,800,860,890,900"}},
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
        "engine": facts(probe={**facts().probe, "modules": {"llama_cpp": "OSError: libcublas.so.13: cannot open "
                                                                          "shared object file"}}),
        "libraries": facts(libraries={"prefix": "/opt/venv", "files": 12,
                                      "missing": {"libcublas.so.12": ["/opt/venv/lib/libggml-cuda.so"]}}),
        "torch-cuda": facts(probe={**facts().probe, "torch_cuda": "13.0"}),   # the image declares CUDA 12.8
        "cuda-arch": facts(config={"Env": GOOD_ENV, "Labels": {lint.GPU_ARCHS_LABEL: facts().built.gpu_archs}}),
        "gpu-archs": facts(built=facts().built.model_copy(update={"gpu_archs": None})),   # a build before the record
        "cuda-runtime": facts(probe={**facts().probe, "cuda": {"llama_cpp CUDA backend": "RuntimeError: no CUDA "
                                                                "backend registered: CPU : SSE3 = 1"}}),
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


def test_the_recorded_gpu_code_must_be_what_torch_was_compiled_for():
    cuda = spec.target("transformers-5.17", None, REPO / "containers/images.toml")
    flags = cuda.spec.cuda_code().flags()
    built = facts().built.model_copy(update={"backend": "transformers-5.17", "gpu_archs": flags})
    config = {"Env": GOOD_ENV, "Labels": {lint.GPU_ARCHS_LABEL: flags}}
    torch = {**facts().probe, "torch_cuda": "13.0", "torch_arch_flags": "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"}
    good = lint.check_gpu_archs(facts(target=cuda, built=built, config=config, probe=torch))
    assert good.ok and "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120" in good.detail
    volta = lint.check_gpu_archs(facts(target=cuda, built=built, config=config,
                                       probe={**torch, "torch_arch_flags": "sm_70 sm_75 sm_80 sm_86 sm_90"}))
    assert not volta.ok and "correct gpu_archs" in volta.detail
    cpu = spec.target("transformers-5.17", "cpu", REPO / "containers/images.toml")
    assert lint.check_gpu_archs(facts(target=cpu)).ok


def test_torch_cuda_must_match_the_declared_cuda():
    cpu = spec.target("transformers-5.17", "cpu", REPO / "containers/images.toml")
    assert lint.check_torch_cuda(facts(target=cpu, probe={**facts().probe, "torch_cuda": None})).ok
    assert not lint.check_torch_cuda(facts(target=cpu, probe={**facts().probe, "torch_cuda": "13.0"})).ok
    cuda = spec.target("transformers-5.17", None, REPO / "containers/images.toml")
    assert lint.check_torch_cuda(facts(target=cuda, probe={**facts().probe, "torch_cuda": "13.0"})).ok
    assert not lint.check_torch_cuda(facts(target=cuda, probe={**facts().probe, "torch_cuda": None})).ok


NO_DRIVER = "OSError: libcuda.so.1: cannot open shared object file: No such file or directory"


def test_only_a_missing_driver_counts_as_no_driver():
    assert lint.needs_driver(NO_DRIVER)
    assert lint.needs_driver("RuntimeError: Found no NVIDIA driver on your system. Please check ...")
    assert lint.needs_driver("RuntimeError: CUDA driver version is insufficient for CUDA runtime version")
    assert not lint.needs_driver("OSError: libcublas.so.13: cannot open shared object file")
    assert not lint.needs_driver("OSError: libcublas.so.13: cannot open shared object file; " + NO_DRIVER)
    assert not lint.needs_driver("ImportError: undefined symbol: cublasLtMatmul")
    assert not lint.needs_driver("")


def test_an_import_that_needs_only_the_driver_is_no_driver_not_pass_or_fail():
    f = lint.check_engine(facts(probe={**facts().probe, "modules": {"vllm": "ok", "vllm._C": NO_DRIVER}}))
    assert (f.ok, f.needs_driver, f.state) == (True, True, "NO-DRIVER")
    assert "vllm ok" in f.detail and "libcuda.so.1" in f.detail
    assert lint.check_engine(facts()).state == "PASS"
    assert lint.check_engine(facts(probe={**facts().probe, "modules": {}})).state == "FAIL"


def test_cuda_runtime_goes_as_far_as_it_can_without_a_driver():
    run = lambda steps, **kw: lint.check_cuda_runtime(facts(probe={**facts().probe, "cuda": steps}, **kw))  # noqa: E731
    assert run({"llama_cpp CUDA backend": "ok: CUDA : ARCHS = 900"}).state == "PASS"
    assert run({"torch.cuda.init": "RuntimeError: Found no NVIDIA driver on your system."}).state == "NO-DRIVER"
    assert run({"torch.cuda.init": "AssertionError: Torch not compiled with CUDA enabled"}).state == "FAIL"
    assert run({}).state == "PASS"                      # an engine with no CUDA step (e.g. gliner2)
    missing = facts(probe={k: v for k, v in facts().probe.items() if k != "cuda"})
    assert lint.check_cuda_runtime(missing).state == "FAIL"
    cpu = spec.target("gguf", "cpu", REPO / "containers/images.toml")
    assert run({"torch.cuda.init": "AssertionError: Torch not compiled with CUDA enabled"}, target=cpu).state == "PASS"


def test_summary_for_the_bench_table():
    ok, driver = lint.Finding("a", True, ""), lint.Finding("engine", True, "", needs_driver=True)
    assert lint.summary([ok]) == "pass"
    assert lint.summary([ok, driver]) == "pass, no-driver (engine)"
    assert lint.summary([driver, lint.Finding("libraries", False, "")]) == "FAIL (libraries)"


def test_fabric_plugins_and_plugin_parents_are_not_missing_libraries_but_only_for_those_files():
    env = "/opt/venv/lib/python3.11/site-packages/"
    found = {"prefix": "/opt/venv", "files": 300, "elsewhere": ["libtriton.so"], "missing": {
        "libcuda.so.1": [env + "torch/lib/libcaffe2_nvrtc.so"],
        "libmlx5.so.1": [env + "nvidia/cu13/lib/libcufile_rdma.so.1", env + "nvidia/nvshmem/lib/nvshmem_transport_ibgda.so.3"],
        "libmpi.so.40": [env + "nvidia/nvshmem/lib/nvshmem_bootstrap_mpi.so.3"],
        "libtriton.so": [env + "triton/plugins/libMLIRDialectPlugin.so"]}}
    f = lint.libraries_finding(found)
    assert f.ok, f.detail
    assert "libmlx5.so.1, libmpi.so.40 only for optional fabric plugins" in f.detail and "libtriton.so" in f.detail
    # the same library needed by a library that is not a fabric plugin is missing
    core = {**found, "missing": {**found["missing"], "libmpi.so.40": [env + "torch/lib/libtorch_cuda.so"]}}
    assert not lint.libraries_finding(core).ok
    # a plugin's parent that is not in the environment, or a non-plugin needing a library found elsewhere
    assert not lint.libraries_finding({**found, "elsewhere": []}).ok
    rpath = {**found, "elsewhere": ["libcudart.so.13"],
             "missing": {"libcudart.so.13": [env + "llama_cpp/lib/libggml-cuda.so"]}}
    assert not lint.libraries_finding(rpath).ok


def test_numbas_optional_threading_layers_and_torch_extensions_are_not_missing_libraries():
    env = "/opt/venv/lib/python3.11/site-packages/"
    found = {"prefix": "/opt/venv", "files": 900, "elsewhere": [], "missing": {
        "libgomp.so.1.0.0": [env + "numba/np/ufunc/omppool.cpython-311-x86_64-linux-gnu.so"],
        "libtbb.so.12": [env + "numba/np/ufunc/tbbpool.cpython-311-x86_64-linux-gnu.so"]},
        "after_torch": {"libc10.so": [env + "vllm/_C.abi3.so", env + "torchaudio/lib/_torchaudio.abi3.so"],
                        "libtorch.so": [env + "vllm/_C.abi3.so"]}}
    f = lint.libraries_finding(found)
    assert f.ok, f.detail
    assert "libgomp.so.1.0.0, libtbb.so.12 only for numba's optional TBB and OpenMP threading layers" in f.detail
    assert "2 modules find once torch is imported (torch extensions that need the driver): libc10.so, libtorch.so" in f.detail
    tried = lint.libraries_finding({**found, "after_torch": {}, "after_import": {"libtvm_ffi.so": [env + "xgrammar/b.so"]}})
    assert tried.ok and "1 modules load once their package is imported (tried): libtvm_ffi.so" in tried.detail
    # the same library needed by another of numba's modules, or by one of its layers and a core module
    core = {**found, "missing": {"libtbb.so.12": [env + "numba/np/ufunc/workqueue.cpython-311-x86_64-linux-gnu.so"]}}
    assert not lint.libraries_finding(core).ok
    mixed = {**found, "missing": {"libgomp.so.1.0.0": [env + "numba/np/ufunc/omppool.cpython-311-x86_64-linux-gnu.so",
                                                       env + "torchcodec/libtorchcodec_core7.so"]}}
    assert lint.libraries_finding(mixed).detail.startswith("1 libraries not found: libgomp.so.1.0.0")
