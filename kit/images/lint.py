"""`kit images lint`: checks of a built image against what every kit image must be.

Each check is a named predicate over facts gathered once: the image config, its history, the
Dockerfile, two in-image probes (`docker run`: imports and versions; ldd over every shared object of
the Python environment) plus the entry point (`kit --version`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import kit
from kit.config.backends import ENGINE_MODULES, engine_for
from kit.images import engine
from kit.images.driver import CUDA_PROBE, needs_driver
from kit.images.built import GPU_ARCHS_LABEL, BuiltImage
from kit.images.execute import run_oci
from kit.images.spec import Target

GPU_ENV = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
ARCH_LABEL = "org.kit.cuda-architectures"   # the image's record of the CUDA architectures it was compiled for
_NATIVE = re.compile(r"CUDA_ARCHITECTURES[= ]*[\"']?(native|all|all-major)\b|GGML_NATIVE=ON", re.I)

PROBE = r"""
import hashlib, importlib, json, os, sys
import kit
out = {"kit_version": kit.__version__, "kit_file": kit.__file__, "modules": {}}
p = os.path.join(os.path.dirname(kit.__file__), "_commit.txt")
out["commit"] = open(p).read().strip() if os.path.exists(p) else None
lock = os.path.join(sys.prefix, "share", "kit", "requirements.lock")
out["lock_sha256"] = hashlib.sha256(open(lock, "rb").read()).hexdigest() if os.path.exists(lock) else None
out["build_inputs_left"] = os.path.exists("/opt/kit-build") or os.path.exists("/opt/kit-src")
for m in [a for a in sys.argv[1:] if a != "--cuda"]:
    try:
        importlib.import_module(m); out["modules"][m] = "ok"
    except Exception as e:
        out["modules"][m] = f"{type(e).__name__}: {e}"[:200]
try:
    import torch
    out["torch_cuda"] = torch.version.cuda
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    out["torch_arch_flags"] = flags() if flags is not None and torch.version.cuda else None
except ImportError:
    out["torch_cuda"] = "absent"
if "--cuda" in sys.argv:
    out["cuda"] = _cuda_steps(out["modules"])
print("KIT-PROBE " + json.dumps(out))
"""
PROBE = CUDA_PROBE + PROBE

# Every shared object under the Python environment, through ldd: what does not resolve, by library.
# A module may name a library that is in the environment but not on its search path, and still load:
# its package's import has loaded that library (by soname) first. Where every library a module lacks
# is in the environment, that is tried for real: its package imported, then the module loaded
# (ctypes), one process per package ("after_import"). A module that also needs the driver cannot be
# loaded here; for torch's extensions (vllm._C, ...) the libraries torch/lib holds and links are then
# counted as loaded by `import torch` ("after_torch"). Whatever is left is missing.
LIB_PROBE = r"""
import json, os, subprocess, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
objects, present, torch_lib = [], set(), None
for top, _, names in os.walk(sys.prefix):
    present.update(names)
    if top.endswith(os.sep + os.path.join("torch", "lib")):
        torch_lib = top
    objects += [os.path.join(top, n) for n in names if (n.endswith(".so") or ".so." in n)
                and not os.path.islink(os.path.join(top, n))]
def ldd(path, dirs):
    # a wheel's bundled libraries (auditwheel's *.libs folders) load each other by soname once the
    # first is loaded: its own folder counts as resolving, as it does at import
    r = subprocess.run(["ldd", path], capture_output=True, text=True, env={**os.environ, "LD_LIBRARY_PATH": ":".join(dirs)})
    found = {}
    for line in r.stdout.splitlines():
        if "=>" in line:
            name, _, where = line.partition("=>")
            where = where.strip()
            found[name.strip()] = None if where.startswith("not found") else where.split(" (")[0]
    return found
def unresolved(path, dirs):
    return [lib for lib, where in ldd(path, dirs).items() if where is None]
torch_dirs, torch_loaded = [torch_lib] if torch_lib else [], set()
for name in os.listdir(torch_lib) if torch_lib else []:
    if name.endswith(".so") or ".so." in name:
        torch_loaded.add(name)
        for lib, where in ldd(os.path.join(torch_lib, name), [torch_lib]).items():
            if where and where.startswith(sys.prefix + os.sep):
                torch_loaded.add(lib)
                if os.path.dirname(where) not in torch_dirs:
                    torch_dirs.append(os.path.dirname(where))
lacking = {path: unresolved(path, [os.path.dirname(path)]) for path in objects}
lacking = {path: libs for path, libs in lacking.items() if libs}
by_package = {}
for path, libs in lacking.items():
    package = os.path.relpath(path, site).split(os.sep)[0]
    if set(libs) <= present and package.isidentifier():
        by_package.setdefault(package, []).append(path)
TRY = "import ctypes, importlib, json, sys\nimportlib.import_module(sys.argv[1])\nok = []\nfor p in sys.argv[2:]:\n    try:\n        ctypes.CDLL(p); ok.append(p)\n    except OSError:\n        pass\nprint('KIT-LOADED ' + json.dumps(ok))"
loaded = set()
for package, paths in sorted(by_package.items()):
    try:
        r = subprocess.run([sys.executable, "-c", TRY, package, *paths], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:   # an import that hangs loads nothing
        continue
    line = next((x for x in r.stdout.splitlines() if x.startswith("KIT-LOADED ")), None)
    loaded.update(json.loads(line[len("KIT-LOADED "):]) if line else [])
missing, after_import, after_torch = {}, {}, {}
for path, libs in lacking.items():
    if path in loaded:
        still = set()
    elif torch_loaded.intersection(libs):
        still = set(unresolved(path, [os.path.dirname(path), *torch_dirs]))
    else:
        still = set(libs)
    for lib in libs:
        kind = missing if lib in still else after_import if path in loaded else after_torch
        kind.setdefault(lib, []).append(path)
elsewhere = sorted(lib for lib in missing if lib in present)   # in the environment, not on the search path
print("KIT-LIBS " + json.dumps({"prefix": sys.prefix, "files": len(objects), "missing": missing,
                                "elsewhere": elsewhere, "after_import": after_import, "after_torch": after_torch}))
"""
# The driver's own libraries come from the host at run time (--nv, Pyxis, the NVIDIA toolkit).
DRIVER_LIBS = re.compile(r"^(libcuda\.so|libnvidia-|libcudadebugger\.so)")
# Optional modules, loaded on demand only where the host provides what they alone need, by the
# path of the module that needs the library, with the reason shown.
OPTIONAL_MODULES = [
    # NVSHMEM's transports and bootstraps, cuFile's RDMA: the cluster's fabric (rdma-core, libfabric,
    # UCX, MPI, PMIx), mounted by its runtime hooks, like the driver
    (re.compile(r"(^|/)(nvshmem_(transport|bootstrap)_\w+\.so[.\d]*|libcufile_rdma\.so[.\d]*)$"),
     "optional fabric plugins (NVSHMEM, cuFile RDMA)"),
    # numba tries TBB, then OpenMP, then its own workqueue, which needs nothing (vLLM's n-gram drafter)
    (re.compile(r"/numba/np/ufunc/(omppool|tbbpool)\.[^/]*\.so$"),
     "numba's optional TBB and OpenMP threading layers (it falls back to its workqueue)"),
]


@dataclass
class Finding:
    """One check's verdict."""

    check: str
    ok: bool
    detail: str
    needs_driver: bool = False   # ok, but went only as far as it can without the host's NVIDIA driver

    @property
    def state(self) -> str:
        """PASS, FAIL, or NO-DRIVER (not broken; the rest needs a GPU host's driver)."""
        return "FAIL" if not self.ok else "NO-DRIVER" if self.needs_driver else "PASS"


@dataclass
class Facts:
    """What the checks look at."""

    target: Target
    built: BuiltImage
    config: dict[str, Any]
    history: list[str]
    dockerfile: str
    probe: dict[str, Any]
    entry: tuple[int, str]
    libraries: dict[str, Any] | None = None   # LIB_PROBE's answer


def _env(facts: Facts) -> dict[str, str]:
    return dict(e.split("=", 1) for e in facts.config.get("Env") or [] if "=" in e)


def check_gpu_env(f: Facts) -> Finding:
    """NVIDIA_VISIBLE_DEVICES=all and NVIDIA_DRIVER_CAPABILITIES=compute,utility in the config."""
    env = _env(f)
    bad = {k: env.get(k) for k, v in GPU_ENV.items() if env.get(k) != v}
    return Finding("gpu-env", not bad, "NVIDIA_* set for Enroot's and the NVIDIA runtime's GPU hooks" if not bad
                   else f"expected {GPU_ENV}, found {bad}")


def check_cuda_arch(f: Facts) -> Finding:
    """No host-dependent CUDA architecture (native, all) anywhere; an explicit list where CUDA is compiled."""
    texts = [f.dockerfile, *f.history, json.dumps(f.built.build_args)]
    hits = [m.group(0) for t in texts for m in _NATIVE.finditer(t)]
    wants_list = "CMAKE_CUDA_ARCHITECTURES" in f.dockerfile
    arch = f.built.build_args.get("CMAKE_CUDA_ARCHITECTURES", "")
    if hits:
        return Finding("cuda-arch", False, f"host-dependent CUDA arch: {', '.join(sorted(set(hits)))}")
    if wants_list and not arch:
        return Finding("cuda-arch", False, "the Dockerfile compiles CUDA but no CMAKE_CUDA_ARCHITECTURES list was passed")
    recorded = (f.config.get("Labels") or {}).get(ARCH_LABEL)
    if arch and recorded != arch:
        return Finding("cuda-arch", False, f"built for {arch} but the image's {ARCH_LABEL} label says {recorded!r}")
    return Finding("cuda-arch", True, f"explicit list {arch}, recorded in the image's {ARCH_LABEL} label" if arch
                   else "no CUDA compilation")


def check_kit_import(f: Facts) -> Finding:
    """kit imports inside the image, at this kit version."""
    p = f.probe
    ok = p.get("kit_version") == kit.__version__
    return Finding("kit-import", ok, f"kit {p.get('kit_version')} at {p.get('kit_file')}" if p else "probe failed")


def check_entry_point(f: Facts) -> Finding:
    """`kit --version` on the image PATH prints this kit version."""
    status, out = f.entry
    return Finding("entry-point", status == 0 and out.strip() == f"kit, version {kit.__version__}",
                   f"`kit --version` -> {status}: {out.strip()[:80]}")


def check_commit(f: Facts) -> Finding:
    """kit/_commit.txt holds the commit recorded in the lock (provenance reads it)."""
    got = f.probe.get("commit")
    return Finding("kit-commit", bool(got) and got == f.built.kit_commit, f"kit/_commit.txt = {got!r}")


def check_lock(f: Facts) -> Finding:
    """The lock file inside the image is the one recorded (same sha256)."""
    got = f.probe.get("lock_sha256")
    return Finding("lock", got == f.built.lock_sha256,
                   f"lock in image {str(got)[:16]} vs recorded {f.built.lock_sha256[:16]}")


def check_no_build_inputs(f: Facts) -> Finding:
    """No build input (CA bundle, wheelhouse, kit source) is left in the image."""
    left = f.probe.get("build_inputs_left")
    return Finding("no-build-inputs", left is False, "no /opt/kit-build or /opt/kit-src (CA bundle, wheels)"
                   if left is False else "build inputs left in the final image")


def check_engine(f: Facts) -> Finding:
    """The libraries of the backend's worker engine import (NO-DRIVER when only the driver is missing)."""
    mods = f.probe.get("modules") or {}
    return _steps_finding("engine", mods, f"imports {', '.join(mods)}", empty_ok=False)


def check_cuda_runtime(f: Facts) -> Finding:
    """A CUDA image's engine reaches its compiled CUDA code as far as it can without a driver."""
    if not f.target.spec.cuda:
        return Finding("cuda-runtime", True, "CPU variant: no CUDA")
    steps = f.probe.get("cuda")
    if steps is None:
        return Finding("cuda-runtime", False, "the probe ran no CUDA step")
    return _steps_finding("cuda-runtime", steps, "; ".join(f"{k} {v}" for k, v in steps.items()) or "no CUDA step "
                          "for this engine", empty_ok=True)


def _steps_finding(check: str, steps: dict[str, str], good: str, *, empty_ok: bool) -> Finding:
    bad = {k: v for k, v in steps.items() if not v.startswith("ok")}
    broken = {k: v for k, v in bad.items() if not needs_driver(v)}
    if broken or not (steps or empty_ok):
        return Finding(check, False, f"failed: {broken}" if broken else "nothing was probed")
    if bad:
        ok = [k for k in steps if k not in bad]
        return Finding(check, True, f"{', '.join(ok) or 'nothing'} ok; needs the host's NVIDIA driver: {bad}",
                       needs_driver=True)
    return Finding(check, True, good)


def check_libraries(f: Facts) -> Finding:
    """Every shared object of the Python environment resolves its libraries (ldd), the driver's aside."""
    return libraries_finding(f.libraries)


def libraries_finding(found: dict[str, Any] | None) -> Finding:
    """The `libraries` finding of a LIB_PROBE answer."""
    if not found:
        return Finding("libraries", False, "the library probe gave no answer (no ldd in the image?)")
    everything = found.get("missing") or {}
    driver = sorted(lib for lib in everything if DRIVER_LIBS.match(lib))
    optional: dict[str, list[str]] = {}   # reason -> libraries
    for lib, paths in sorted(everything.items()):
        reasons = {next((why for pattern, why in OPTIONAL_MODULES if pattern.search(p)), None) for p in paths}
        if lib not in driver and len(reasons) == 1 and None not in reasons:
            optional.setdefault(reasons.pop(), []).append(lib)
    # a plugin folder's library needing its parent library, which is in the environment and loaded first
    # (triton/plugins/*.so need triton/_C/libtriton.so)
    parent = sorted(lib for lib, paths in everything.items() if lib in (found.get("elsewhere") or [])
                    and all("/plugins/" in p for p in paths))
    tolerated = {*driver, *parent, *(lib for libs in optional.values() for lib in libs)}
    missing = {lib: paths for lib, paths in everything.items() if lib not in tolerated}
    if missing:
        shown = "; ".join(f"{lib} (needed by {paths[0]}{f' and {len(paths) - 1} more' if len(paths) > 1 else ''})"
                          for lib, paths in sorted(missing.items())[:5])
        return Finding("libraries", False, f"{len(missing)} libraries not found: {shown}")
    notes = ([f"the driver's {', '.join(driver)} come from the host"] if driver else []) + [
        f"{', '.join(libs)} only for {why}" for why, libs in optional.items()] + (
        [f"{', '.join(parent)} loaded by the plugins' parent first"] if parent else [])
    for key, how in (("after_import", "load once their package is imported (tried)"),
                     ("after_torch", "find once torch is imported (torch extensions that need the driver)")):
        libs = found.get(key) or {}
        if libs:
            modules = {p for paths in libs.values() for p in paths}
            notes.append(f"{len(modules)} modules {how}: {', '.join(sorted(libs))}")
    return Finding("libraries", True, f"{found.get('files')} shared objects under {found.get('prefix')} resolve"
                   + (f" ({'; '.join(notes)})" if notes else ""))


def check_torch_cuda(f: Facts) -> Finding:
    """torch's CUDA build is the image's declared CUDA (none for a CPU variant)."""
    got, declared = f.probe.get("torch_cuda"), f.target.spec.cuda or None
    if got == "absent":
        return Finding("torch-cuda", True, "no torch in the image")
    ok = (got is None and declared is None) or (got is not None and declared is not None
                                               and str(got).split(".")[:2] == declared.split(".")[:2])
    return Finding("torch-cuda", ok, f"torch.version.cuda = {got!r}, the image declares cuda = {declared!r}")


def check_gpu_archs(f: Facts) -> Finding:
    """The GPU code the image records (lock and label) is what its torch was compiled for."""
    from kit.gpus import parse_arch_flags

    declared = f.target.spec.cuda_code()
    if declared is None:
        return Finding("gpu-archs", True, "CPU variant: no GPU code")
    label = (f.config.get("Labels") or {}).get(GPU_ARCHS_LABEL)
    if label != declared.flags() or f.built.gpu_archs != declared.flags():
        return Finding("gpu-archs", False, f"images.toml says {declared.flags()!r}, the image's {GPU_ARCHS_LABEL} "
                                           f"label {label!r} and the lock {f.built.gpu_archs!r}: build it again")
    flags = f.probe.get("torch_arch_flags")
    if f.probe.get("torch_cuda") == "absent" or not flags:
        return Finding("gpu-archs", True, f"{declared.flags()} (from the build's CMAKE_CUDA_ARCHITECTURES; no CUDA "
                                          "torch to compare)")
    got = parse_arch_flags(flags)
    same = (got.sass, got.ptx, got.exact) == (declared.sass, declared.ptx, declared.exact)
    return Finding("gpu-archs", same, f"torch was compiled for {flags!r}" + (
        "" if same else f", images.toml's gpu_archs says {f.target.spec.gpu_archs!r}: correct gpu_archs"))


CHECKS: list[Callable[[Facts], Finding]] = [check_gpu_env, check_cuda_arch, check_gpu_archs, check_kit_import, check_entry_point,
                                            check_commit, check_lock, check_no_build_inputs, check_engine,
                                            check_libraries, check_torch_cuda, check_cuda_runtime]


def gather(t: Target, built: BuiltImage) -> Facts:
    """Inspect the image and run the probe and the entry point inside it."""
    attrs = engine.image_attrs(built.image_id)
    history = [h.get("CreatedBy", "") for h in engine.client().api.history(built.image_id)]
    modules = list(ENGINE_MODULES.get(engine_for(t.name), ()))
    r = run_oci(built.image_id, ["python3", "-c", PROBE, *modules, *(["--cuda"] if t.spec.cuda else [])], [], {})
    line = next((x for x in r.stdout.splitlines() if x.startswith("KIT-PROBE ")), None)
    probe = json.loads(line[len("KIT-PROBE "):]) if line else {}
    e = run_oci(built.image_id, ["kit", "--version"], [], {})
    return Facts(t, built, attrs.get("Config") or {}, history, t.path(t.spec.dockerfile).read_text(), probe,
                 (e.status, e.stdout + e.stderr), probe_libraries(built.image_id))


def probe_libraries(image: str) -> dict[str, Any] | None:
    """LIB_PROBE's answer inside an image (its python3's environment), or None when it gave none."""
    r = run_oci(image, ["python3", "-c", LIB_PROBE], [], {})
    line = next((x for x in r.stdout.splitlines() if x.startswith("KIT-LIBS ")), None)
    return json.loads(line[len("KIT-LIBS "):]) if line else None


def lint(t: Target, built: BuiltImage) -> list[Finding]:
    """Every check's finding for a built image."""
    facts = gather(t, built)
    return [check(facts) for check in CHECKS]


def summary(findings: list[Finding]) -> str:
    """One word for a table: pass, no-driver (which checks), or FAIL (which checks)."""
    failed = [f.check for f in findings if not f.ok]
    driver = [f.check for f in findings if f.ok and f.needs_driver]
    if failed:
        return f"FAIL ({', '.join(failed)})"
    return f"pass, no-driver ({', '.join(driver)})" if driver else "pass"
