"""kit.images.prebuilt: a machine-built wheel with a missing shared library added beside its own
(gguf's CPU wheel gets libgomp), byte-stable, and its one-line hashed lock."""

from __future__ import annotations

import base64
import hashlib
import zipfile

import pytest

from kit.errors import ImageError
from kit.images.prebuilt import bundle_libs, write_lock
from kit.images.wheelhouse import lock_hashes


def _wheel(path, files: dict[str, bytes]):
    record = "pkg-1.0.dist-info/RECORD"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(record, "".join(f"{n},sha256=x,{len(d)}\n" for n, d in files.items()) + f"{record},,\n")
    return path


def test_the_library_is_added_and_recorded_and_the_result_is_stable(tmp_path):
    wheel = _wheel(tmp_path / "pkg-1.0-py3-none-linux_x86_64.whl",
                   {"pkg/__init__.py": b"", "pkg/lib/libpkg.so": b"\x7fELF pkg"})
    lib = tmp_path / "libgomp.so.1"
    lib.write_bytes(b"\x7fELF gomp")
    first = bundle_libs(wheel, [lib], "pkg/lib", tmp_path / "a")
    second = bundle_libs(wheel, [lib], "pkg/lib", tmp_path / "b")
    assert first.name == wheel.name and first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as z:
        assert z.read("pkg/lib/libgomp.so.1") == b"\x7fELF gomp"
        rows = z.read("pkg-1.0.dist-info/RECORD").decode().splitlines()
        assert z.namelist()[-1] == "pkg-1.0.dist-info/RECORD"
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"\x7fELF gomp").digest()).rstrip(b"=").decode()
    assert f"pkg/lib/libgomp.so.1,sha256={digest},9" in rows and rows[-1] == "pkg-1.0.dist-info/RECORD,,"
    lock = tmp_path / "x.lock"
    sha = write_lock(first, "pkg==1.0", lock, "line one\nline two")
    assert lock_hashes(lock) == {"pkg==1.0": {sha}} and lock.read_text().startswith("# line one\n# line two\n")


def test_a_wheel_without_the_folder_is_refused(tmp_path):
    wheel = _wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/__init__.py": b""})
    with pytest.raises(ImageError) as exc:
        bundle_libs(wheel, [], "pkg/lib", tmp_path / "out")
    assert "pkg/lib" in exc.value.one_line()
