"""Which NVIDIA GPUs an image's CUDA code runs on (pure, standard library only).

An image carries machine code (SASS) for some compute capabilities and maybe PTX, which the
driver compiles for newer GPUs at load time. A GPU of compute capability M.n runs the image when
the image has SASS for M.k with k <= n (SASS is compatible within one major version, upwards), or
PTX for any capability at or below M.n. Nothing runs on an older GPU than the oldest capability
the image was built for: a Volta (7.0) node fails at CUDA start with a Turing-and-newer (7.5) build.

Two grammars name what a build carries: CMake's CMAKE_CUDA_ARCHITECTURES ("70;75;80;86;89;90", a
plain number meaning SASS and PTX, "-real" SASS only, "-virtual" PTX only, an "a" suffix code for
that exact capability) and PyTorch's TORCH_CUDA_ARCH_LIST ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", SASS
for each, PTX only where "+PTX" says). GPU models are mapped to their capability from NVIDIA's
published table (developer.nvidia.com/cuda-gpus), matched on the names `nvidia-smi` and
Grid'5000's `gpu_model` property print ("Tesla V100-PCIE-32GB", "A100-SXM4-40GB", "L40S")."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Capability = tuple[int, int]

# NVIDIA's compute capabilities of data-centre and workstation GPUs people run models on, most
# specific names first ("RTX 6000 Ada" before the Turing "Quadro RTX 6000")
_MODELS: tuple[tuple[str, Capability], ...] = (
    (r"\bGB300\b|\bB300\b", (10, 3)),
    (r"\bGB200\b|\bB200\b|\bB100\b", (10, 0)),
    (r"\bGB10\b", (12, 1)),
    (r"RTX\s*PRO\s*\d{4}|RTX\s*50\d0|Blackwell", (12, 0)),
    (r"\bGH200\b|\bH100\b|\bH200\b|\bH800\b|\bH20\b", (9, 0)),
    (r"RTX\s*\d{4}\s*Ada|\bL40S?\b|\bL4\b|\bL20\b|RTX\s*40\d0", (8, 9)),
    (r"\bA100\b|\bA800\b|\bA30\b", (8, 0)),
    (r"RTX\s*A\d{4}|\bA40\b|\bA10G?\b|\bA16\b|\bA2\b|RTX\s*30\d0", (8, 6)),
    (r"\bT4\b|Quadro\s*RTX|\bRTX\s*(?:6000|8000)\b|RTX\s*20\d0|TITAN\s*RTX", (7, 5)),
    (r"\bV100|TITAN\s*V\b", (7, 0)),
    (r"\bP100\b", (6, 0)),
    (r"\bP40\b|\bP4\b|GTX\s*10\d0|TITAN\s*Xp?\b", (6, 1)),
    (r"\bM40\b|\bM60\b|GTX\s*9\d0|TITAN\s*X\b", (5, 2)),
    (r"\bK80\b", (3, 7)),
    (r"\bK40\b|\bK20X?\b", (3, 5)),
)
_MODEL_RES = tuple((re.compile(p, re.IGNORECASE), cc) for p, cc in _MODELS)
# every capability of the table: the GPUs an OAR filter can meet
KNOWN: tuple[Capability, ...] = tuple(sorted({cc for _, cc in _MODELS}))
_CC = re.compile(r"^\s*(\d{1,2})\.(\d)\s*\Z")
_CMAKE_ARCH = re.compile(r"^(\d{2,3})([af]?)(-real|-virtual)?\Z")
_TORCH_ARCH = re.compile(r"^(\d{1,2})\.(\d)([af]?)(\+PTX)?$", re.IGNORECASE)


@dataclass(frozen=True)
class GpuArchs:
    """What an image's CUDA code was compiled for: SASS capabilities, PTX capabilities, and capabilities
    whose code runs on that exact capability only ("90a")."""

    sass: frozenset[Capability]
    ptx: frozenset[Capability]
    exact: frozenset[Capability] = frozenset()

    def runs_on(self, cc: Capability) -> bool:
        """Whether a GPU of compute capability `cc` runs this code."""
        return (cc in self.exact or any(m == cc[0] and n <= cc[1] for m, n in self.sass)
                or any(p <= cc for p in self.ptx))

    def known(self) -> tuple[list[Capability], Capability | None]:
        """The known GPUs' capabilities that run this code, and the oldest of them when every newer known
        GPU runs it too (None otherwise: the code skips some)."""
        ok = [cc for cc in KNOWN if self.runs_on(cc)]
        return ok, ok[0] if ok and ok == [cc for cc in KNOWN if cc >= ok[0]] else None

    def flags(self) -> str:
        """The code as compiler flags: 'sm_75 sm_80 compute_80' (sm: SASS, compute: PTX, an 'a' suffix:
        that capability only), the form the images lock records and parse_arch_flags reads."""
        def code(cc: Capability) -> str:
            return f"{cc[0]}{cc[1]}"
        return " ".join([*(f"sm_{code(c)}" for c in sorted(self.sass)), *(f"sm_{code(c)}a" for c in sorted(self.exact)),
                         *(f"compute_{code(c)}" for c in sorted(self.ptx))])

    def describe(self) -> str:
        """'compute capability 7.5 and newer' or 'compute capability 8.0, 8.6, 8.9', over the known GPUs."""
        ok, floor = self.known()
        if floor is not None:
            return f"compute capability {cc_text(floor)} and newer"
        return "compute capability " + (", ".join(cc_text(cc) for cc in ok) or "none kit knows")


def cc_text(cc: Capability) -> str:
    """(8, 6) -> '8.6'."""
    return f"{cc[0]}.{cc[1]}"


def parse_capability(text: str) -> Capability:
    """'8.6' -> (8, 6); a ValueError for anything else."""
    m = _CC.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a compute capability (write it as nvidia-smi --query-gpu=compute_cap "
                         "prints it, e.g. '8.6')")
    return int(m.group(1)), int(m.group(2))


def _split(text: str) -> list[str]:
    return [p for p in re.split(r"[;,\s]+", text.strip()) if p]


def _read_list(text: str, part_re: re.Pattern, hint: str,
               code: Callable[[re.Match], tuple[Capability, str]]) -> GpuArchs:
    """A GpuArchs from a list whose every part matches `part_re`; `code` gives a part's capability and
    what it carries: 'sass', 'ptx', 'both' or 'exact'."""
    found: dict[str, set[Capability]] = {"sass": set(), "ptx": set(), "exact": set()}
    parts = _split(text)
    if not parts:
        raise ValueError(f"{text!r} names no CUDA architecture")
    for part in parts:
        m = part_re.match(part)
        if not m:
            raise ValueError(f"{part!r} in {text!r} is not a CUDA architecture ({hint})")
        cc, kind = code(m)
        for k in (("sass", "ptx") if kind == "both" else (kind,)):
            found[k].add(cc)
    return GpuArchs(frozenset(found["sass"]), frozenset(found["ptx"]), frozenset(found["exact"]))


def _cmake_part(m: re.Match) -> tuple[Capability, str]:
    cc = (int(m.group(1)) // 10, int(m.group(1)) % 10)
    if m.group(2):                       # 90a, 100f: features of that capability only
        return cc, "exact"
    return cc, {"-real": "sass", "-virtual": "ptx"}.get(m.group(3) or "", "both")


def parse_cmake_archs(text: str) -> GpuArchs:
    """CMAKE_CUDA_ARCHITECTURES ('70;75;80;86;89;90', '90-real', '90a') as a GpuArchs; a ValueError
    for 'native', 'all' or anything that names no architecture."""
    return _read_list(text, _CMAKE_ARCH, "write them like 70;75;80;86;89;90, never native or all", _cmake_part)


def _torch_part(m: re.Match) -> tuple[Capability, str]:
    cc = (int(m.group(1)), int(m.group(2)))
    if m.group(3):
        return cc, "exact"
    return cc, "both" if m.group(4) else "sass"


def parse_torch_archs(text: str) -> GpuArchs:
    """TORCH_CUDA_ARCH_LIST ('7.5;8.0;8.6;9.0;10.0;12.0+PTX') as a GpuArchs; a ValueError otherwise."""
    return _read_list(text, _TORCH_ARCH, "TORCH_CUDA_ARCH_LIST's form, e.g. 7.5;8.0;8.6;9.0;12.0+PTX", _torch_part)


_FLAG = re.compile(r"^(sm|compute)_(\d{2,3})([af]?)\Z")


def _flag_part(m: re.Match) -> tuple[Capability, str]:
    cc = (int(m.group(2)) // 10, int(m.group(2)) % 10)
    return cc, "exact" if m.group(3) else ("sass" if m.group(1) == "sm" else "ptx")


def parse_arch_flags(flags: str) -> GpuArchs:
    """torch's compiled arch flags ('sm_75 sm_80 sm_86 sm_90 compute_90', torch._C._cuda_getArchFlags()),
    the form the images lock records."""
    return _read_list(flags, _FLAG, "sm_NN or compute_NN flags", _flag_part)


def model_capability(model: str) -> Capability | None:
    """The compute capability of a GPU model name ('Tesla V100-SXM2-32GB' -> (7, 0)); None when unknown."""
    for pattern, cc in _MODEL_RES:
        if pattern.search(model):
            return cc
    return None


def oar_capability_term(archs: GpuArchs) -> str:
    """An OAR property expression selecting the GPUs that run `archs`, in Grid'5000's properties:
    gpu_compute_capability (a string, '8.6') and gpu_compute_capability_major (an integer). The
    string alone does not order ('10.0' < '7.5'), so the major version orders and the string
    decides within one major."""
    ok, floor = archs.known()
    if floor is not None:
        major, minor = floor
        if minor == 0:
            return f"gpu_compute_capability_major>={major}"
        return (f"(gpu_compute_capability_major>{major} OR (gpu_compute_capability_major={major} AND "
                f"gpu_compute_capability>='{major}.{minor}'))")
    listed = ", ".join(f"'{cc_text(cc)}'" for cc in ok) or "''"
    return f"gpu_compute_capability IN ({listed})"
