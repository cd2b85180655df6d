"""A wheel compiled on this machine, made fit for an image: the shared libraries it links to but
the base image lacks are copied into the wheel beside its own (as auditwheel does), and a hashed
lock names the result.

The gguf CPU variant uses it: the llama-cpp-python wheel that scripts/backends/llamacpp-venv.sh
compiles once per machine needs libgomp.so.1 (OpenMP), which the minimal Debian base has not, and
its libraries find siblings through RUNPATH $ORIGIN. The output is byte-stable: the same wheel and
libraries give the same file, so its lock holds until the wheel is compiled again."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from kit.errors import ImageError

_EPOCH = (1980, 1, 1, 0, 0, 0)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def bundle_libs(wheel: Path, libs: list[Path], lib_dir: str, dest: Path) -> Path:
    """Write a copy of the wheel into the folder dest, with each library added under lib_dir
    (a folder inside the wheel) and listed in its RECORD; return the new wheel's path."""
    wheel = Path(wheel)
    with zipfile.ZipFile(wheel) as src:
        names = src.namelist()
        record = next((n for n in names if n.endswith(".dist-info/RECORD")), None)
        if record is None:
            raise ImageError(f"{wheel} has no RECORD", fix="rebuild the wheel (scripts/backends/llamacpp-venv.sh --wheel)")
        if not any(n.startswith(lib_dir.rstrip("/") + "/") for n in names):
            raise ImageError(f"{wheel} has no folder {lib_dir}", fix="name the folder that holds the wheel's libraries")
        entries = {n: src.read(n) for n in names if n != record}
        rows = [r for r in src.read(record).decode().splitlines() if r and not r.startswith(record + ",")]
    for lib in libs:
        data = Path(lib).read_bytes()
        name = f"{lib_dir.rstrip('/')}/{Path(lib).name}"
        entries[name] = data
        rows = [r for r in rows if not r.startswith(name + ",")] + [f"{name},{_record_hash(data)},{len(data)}"]
    rows.append(f"{record},,")
    entries[record] = ("\n".join(rows) + "\n").encode()
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / wheel.name
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for name in sorted(entries, key=lambda n: (n == record, n)):   # RECORD last, as wheels have it
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = (0o755 if ".so" in name else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(info, entries[name])
    tmp.replace(out)
    return out


def write_lock(wheel: Path, requirement: str, lock: Path, note: str) -> str:
    """Write a one-line hashed lock pinning the wheel as `requirement` (e.g. pkg==1.0); its sha256."""
    digest = hashlib.sha256(Path(wheel).read_bytes()).hexdigest()
    text = "".join(f"# {line}\n" for line in note.splitlines()) + f"{requirement} \\\n    --hash=sha256:{digest}\n"
    Path(lock).write_text(text, encoding="utf-8")
    return digest
