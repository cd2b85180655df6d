"""bench/gpu/pack_llama_cpp.py: the llama-cpp-python sdist trimmed to what a CUDA build needs, so that
it travels to the GPU machine (at most 64 MiB there; the sdist is 74 MiB)."""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.gpu.pack_llama_cpp import trim  # noqa: E402

KEPT = ["pyproject.toml", "CMakeLists.txt", "llama_cpp/__init__.py", "llama_cpp/lib/.keep",
        "vendor/llama.cpp/CMakeLists.txt", "vendor/llama.cpp/src/llama.cpp", "vendor/llama.cpp/include/llama.h",
        "vendor/llama.cpp/common/common.cpp", "vendor/llama.cpp/vendor/nlohmann/json.hpp",
        "vendor/llama.cpp/cmake/common.cmake", "vendor/llama.cpp/gguf-py/gguf/__init__.py",
        "vendor/llama.cpp/ggml/CMakeLists.txt", "vendor/llama.cpp/ggml/include/ggml.h",
        "vendor/llama.cpp/ggml/src/ggml.c", "vendor/llama.cpp/ggml/src/ggml-backend.cpp",
        "vendor/llama.cpp/ggml/src/ggml-cpu/ggml-cpu.c", "vendor/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu",
        "vendor/llama.cpp/ggml/src/ggml-cuda/template-instances/fattn-vec.cu"]
DROPPED = ["examples/simple.py", "docs/index.md", "tests/test_llama.py", "vendor/other/x.c",
           "vendor/llama.cpp/models/ggml-vocab-llama.gguf", "vendor/llama.cpp/docs/build.md",
           "vendor/llama.cpp/tools/mtmd/mtmd.cpp", "vendor/llama.cpp/tests/test-backend-ops.cpp",
           "vendor/llama.cpp/ggml/src/ggml-vulkan/ggml-vulkan.cpp", "vendor/llama.cpp/ggml/src/ggml-sycl/x.cpp",
           "vendor/llama.cpp/ggml/src/ggml-metal/ggml-metal.m", "vendor/llama.cpp/examples/main/main.cpp"]


def test_the_trimmed_archive_keeps_the_cuda_build_and_leaves_the_rest(tmp_path):
    sdist = tmp_path / "llama_cpp_python-9.9.9.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name in KEPT + DROPPED:
            data = f"content of {name}".encode()
            info = tarfile.TarInfo(f"llama_cpp_python-9.9.9/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out = trim(sdist, tmp_path / "carry")
    assert out.name == "llama_cpp_python-9.9.9-trimmed.tar.gz"
    with tarfile.open(out) as tar:
        names = {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar if m.isfile()}
    assert set(names) == set(KEPT)
    assert names["vendor/llama.cpp/ggml/src/ggml.c"] == b"content of vendor/llama.cpp/ggml/src/ggml.c"
