"""What a CUDA image can show without a GPU: which failures only mean "no NVIDIA driver here".

A CUDA image is built and linted on machines without a GPU. The driver (libcuda.so.1, libnvidia-*)
comes from the host at run time (--nv, Pyxis, the NVIDIA container toolkit), so an import or an
initialisation that fails only for want of it is neither a pass nor a broken image: lint reports
it as NO-DRIVER. Any other failure (a missing cuBLAS, an undefined symbol) is a broken image."""

from __future__ import annotations

import re

# messages of the loader, torch, the CUDA runtime and NVML when no driver (or no GPU) is present
_DRIVER = re.compile(
    r"libcuda\.so(\.1)?: cannot open shared object file"
    r"|libnvidia-ml\.so(\.1)?: cannot open shared object file"
    r"|found no nvidia driver"
    r"|cuda driver version is insufficient"
    r"|no cuda-capable device is detected"
    r"|cudaErrorNoDevice|cudaErrorInsufficientDriver|CUDA_ERROR_NO_DEVICE|CUDA_ERROR_NOT_INITIALIZED"
    r"|NVML Shared Library Not Found", re.I)
# a missing library other than the driver's, named in a loader message
_OTHER_LIB = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def needs_driver(message: str) -> bool:
    """True when a failure message's only cause is the absent NVIDIA driver (or GPU)."""
    if not message or not _DRIVER.search(message):
        return False
    return all(m.group(1).startswith(("libcuda.so", "libnvidia-")) for m in _OTHER_LIB.finditer(message))


# Run inside the image after its engine modules imported (PROBE's "cuda" answer): each step goes as far
# as it can without a driver. torch initialises CUDA; llama.cpp lists its registered backends (CUDA is
# registered when compiled in, with no device when there is no driver); vLLM loads its compiled
# CUDA kernels module (vllm._C, or vllm._C_stable_libtorch in vLLM 0.33).
CUDA_PROBE = r"""
def _cuda_steps(modules):
    steps = {}
    def run(name, fn):
        try:
            got = fn()
            steps[name] = "ok" + (f": {got}" if got else "")
        except BaseException as e:
            steps[name] = f"{type(e).__name__}: {e}"[:300]
    if modules.get("torch") == "ok":
        import torch
        run("torch.cuda.init", lambda: torch.cuda.init())
    if modules.get("llama_cpp") == "ok":
        import llama_cpp
        def backend():
            info = llama_cpp.llama_print_system_info().decode(errors="replace")
            part = next((p.strip() for p in info.split("CUDA :")[1:2]), None)
            if part is None:
                raise RuntimeError(f"no CUDA backend registered: {info[:200]}")
            return "CUDA : " + part[:120]
        run("llama_cpp CUDA backend", backend)
    if modules.get("vllm") == "ok":
        import importlib, importlib.util
        # the kernels module: vllm._C, or vllm._C_stable_libtorch (vLLM 0.33)
        name = next((m for m in ("vllm._C", "vllm._C_stable_libtorch") if importlib.util.find_spec(m)), "vllm._C")
        run(name, lambda: importlib.import_module(name) and None)
    return steps
"""
