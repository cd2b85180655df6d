"""`kit images lint`'s library check (issue 19): ldd over every shared object of an image's Python
environment finds a library the image lacks, and does not count the driver's own libraries (libcuda,
libnvidia-*: the host brings them). Built on purpose from the bootstrapped Debian base with a real
compiler: one object that needs a missing libghost.so, one that needs the driver's libcuda.so.1, a
torch extension that needs torch/lib's libc10.so and the driver (found once `import torch` has loaded
it), and two packages whose modules need a library elsewhere in the environment: pkgb's import loads it
(so its module loads), pkgc's does not (missing, as llama.cpp's CUDA backend once was)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kit.images.lint import libraries_finding, probe_libraries

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
TAG = "kit/test-missing-library:latest"
SITE = "/opt/venv/lib/python3.11/site-packages"   # the bootstrapped bookworm base's Python
ROOT_ON_DEBIAN = os.geteuid() == 0 and Path("/etc/debian_version").is_file()


def sh(argv: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kw)
    if r.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
    return r


@pytest.fixture(scope="module")
def broken_image():
    if not ROOT_ON_DEBIAN or shutil.which("gcc") is None:
        pytest.skip("needs root on Debian with gcc (scripts/dev/packages.sh installs build-essential)")
    sh(["bash", str(REPO / "scripts/dev/dockerd.sh"), "start"])
    sh(["bash", str(REPO / "scripts/bootstrap-base.sh"), "bookworm", "kit/base:bookworm"])
    with tempfile.TemporaryDirectory() as ctx:
        c = Path(ctx)
        (c / "ghost.c").write_text("int ghost(void) { return 1; }\n")
        (c / "uses.c").write_text("int ghost(void);\nint uses(void) { return ghost(); }\n")
        for soname in ("libghost.so", "libcuda.so.1", "libc10.so", "libprov.so", "libprov2.so"):
            sh(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", soname, "ghost.c"], cwd=c)
        sh(["gcc", "-shared", "-fPIC", "-o", "libneedsghost.so", "uses.c", "-L.", "-l:libghost.so"], cwd=c)
        sh(["gcc", "-shared", "-fPIC", "-o", "libneedsdriver.so", "uses.c", "-L.", "-l:libcuda.so.1"], cwd=c)
        sh(["gcc", "-shared", "-fPIC", "-o", "torchext.so", "uses.c", "-L.", "-l:libc10.so", "-l:libcuda.so.1"], cwd=c)
        sh(["gcc", "-shared", "-fPIC", "-o", "extb.so", "uses.c", "-L.", "-l:libprov.so"], cwd=c)
        sh(["gcc", "-shared", "-fPIC", "-o", "extc.so", "uses.c", "-L.", "-l:libprov2.so"], cwd=c)
        (c / "pkgb.py").write_text("import ctypes, os\n"
                                   "ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'lib', 'libprov.so'))\n")
        (c / "Dockerfile").write_text(
            "FROM kit/base:bookworm\nRUN python3 -m venv /opt/venv\n"
            "COPY libneedsghost.so libneedsdriver.so /opt/venv/lib/\nCOPY libc10.so /opt/venv/lib/torch/lib/\n"
            "COPY torchext.so /opt/venv/lib/ext/\n"
            f"COPY libprov.so {SITE}/pkgb/lib/\nCOPY extb.so {SITE}/pkgb/\nCOPY pkgb.py {SITE}/pkgb/__init__.py\n"
            f"COPY libprov2.so {SITE}/pkgc/other/\nCOPY extc.so {SITE}/pkgc/\nRUN touch {SITE}/pkgc/__init__.py\n"
            "ENV PATH=/opt/venv/bin:$PATH\n")
        sh(["env", "DOCKER_BUILDKIT=0", "docker", "build", "-q", "-t", TAG, ctx])
    yield TAG
    subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True)


def test_a_library_the_image_lacks_is_found_and_the_drivers_is_not_counted(broken_image):
    found = probe_libraries(broken_image)
    assert found is not None and found["prefix"] == "/opt/venv"
    assert set(found["missing"]) == {"libghost.so", "libcuda.so.1", "libprov2.so"}      # what ldd saw
    assert found["after_torch"] == {"libc10.so": ["/opt/venv/lib/ext/torchext.so"]}
    assert found["after_import"] == {"libprov.so": [f"{SITE}/pkgb/extb.so"]}
    finding = libraries_finding(found)
    assert not finding.ok
    assert finding.detail.startswith("2 libraries not found: libghost.so (needed by /opt/venv/lib/libneedsghost.so); "
                                     f"libprov2.so (needed by {SITE}/pkgc/extc.so)"), finding.detail
    assert "libcuda" not in finding.detail and "libc10" not in finding.detail and "libprov.so" not in finding.detail


def test_the_driver_alone_missing_passes():
    ok = libraries_finding({"prefix": "/opt/venv", "files": 3, "missing": {"libcuda.so.1": ["/opt/venv/x.so"],
                                                                             "libnvidia-ml.so.1": ["/opt/venv/y.so"]}})
    assert ok.ok and "libcuda.so.1, libnvidia-ml.so.1 come from the host" in ok.detail
    assert not libraries_finding(None).ok
