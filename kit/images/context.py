"""The build context kit sends to the Docker engine, assembled file by file.

It holds only what the Dockerfiles COPY: kit's source (pyproject.toml, README.md, kit/), the
image's Dockerfile and lock files, and `.kit-build/` with the optional CA bundle (`ca.pem`)
and wheelhouse files (`wheels/`). Nothing else of the checkout (no .git, .venv, results or
caches) can reach an image, whatever ignore files say. Entries are sorted with fixed times,
owners and modes, so an unchanged input gives a byte-identical context and Docker's cache hits.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import BinaryIO

from kit.errors import ConfigError
from kit.files import read_regular_file
from kit.images.spec import Target

BUILD_DIR = ".kit-build"
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")
# kit/_commit.txt is baked from the KIT_COMMIT build argument, never copied from the checkout
_SKIP_FILES = {"kit/_commit.txt"}


def source_files(root: Path) -> list[str]:
    """Repository-relative paths of kit's source that every image installs."""
    out = ["pyproject.toml", "README.md"]
    for dirpath, dirnames, filenames in os.walk(root / "kit"):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if not name.endswith(_SKIP_SUFFIXES) and rel not in _SKIP_FILES:
                out.append(rel)
    return out


def context_files(t: Target) -> dict[str, Path]:
    """Context path -> host file, for the image's Dockerfile, locks and kit's source."""
    rels = [t.spec.dockerfile, *t.spec.locks(), *source_files(t.root)]
    files = {}
    for rel in rels:
        path = t.path(rel)
        if not path.is_file():   # missing, or a folder, device or pipe (is_file follows a link to a file)
            what = "missing from" if not os.path.lexists(path) else "not a regular file, so it cannot go into"
            raise ConfigError(f"{path}: {what} the build context of {t.name}",
                              fix="restore it from git (locks: make locks)")
        files[rel] = path
    return files


def _add(tar: tarfile.TarFile, name: str, *, path: Path | None = None, data: bytes | None = None) -> None:
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if path is not None and path.is_dir():
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        return
    if path is not None:
        info.size = path.stat().st_size
        info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
        with open(path, "rb") as fh:
            tar.addfile(info, fh)
    else:
        info.size, info.mode = len(data or b""), 0o644
        tar.addfile(info, io.BytesIO(data or b""))


CA_BUNDLE_LIMIT = 16 << 20   # a system's whole bundle is about 200 KB


def check_ca_bundle(path: Path) -> None:
    """A ConfigError unless `path` is a regular file holding PEM certificates (what pip's --cert reads):
    asked before a build starts, never after its downloads."""
    body = read_regular_file(Path(path), "--ca-bundle", CA_BUNDLE_LIMIT,
                             fix="pass a PEM bundle, e.g. /etc/ssl/certs/ca-certificates.crt")
    if b"-----BEGIN CERTIFICATE-----" not in body:
        raise ConfigError(f"--ca-bundle {path}: holds no PEM certificate", fix="pass a PEM bundle, e.g. "
                          "/etc/ssl/certs/ca-certificates.crt")
    if b"PRIVATE KEY-----" in body:   # (PKCS#8, RSA, EC, encrypted, OpenSSH): the build would carry it in
        raise ConfigError(f"--ca-bundle {path}: holds a private key as well as certificates; a build takes no "
                          "credential in", fix="pass a bundle of CA certificates only, e.g. "
                          "/etc/ssl/certs/ca-certificates.crt")


def write_context(t: Target, out: BinaryIO, *, ca_bundle: Path | None = None, wheels: list[Path] = ()) -> None:
    """Write the build context of an image as an uncompressed tar stream."""
    files = context_files(t)
    dirs = sorted({p.as_posix() for rel in files for p in Path(rel).parents if p.as_posix() != "."})
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for d in dirs:
            _add(tar, d + "/", path=t.root)
        for rel in sorted(files):
            _add(tar, rel, path=files[rel])
        _add(tar, f"{BUILD_DIR}/", path=t.root)
        _add(tar, f"{BUILD_DIR}/README", data=b"build inputs kit adds: ca.pem (pip's CA bundle), wheels/\n")
        if ca_bundle is not None:
            check_ca_bundle(ca_bundle)
            _add(tar, f"{BUILD_DIR}/ca.pem", path=Path(ca_bundle))
        if wheels:
            _add(tar, f"{BUILD_DIR}/wheels/", path=t.root)
            for w in sorted(wheels, key=lambda p: p.name):
                _add(tar, f"{BUILD_DIR}/wheels/{w.name}", path=w)
