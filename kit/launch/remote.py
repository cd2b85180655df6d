"""A site's files as seen from here: results trees copied over the frontend's ssh, inputs copied there.

Remote status works on a local mirror: kit lists the site's checkpoints on the frontend
(`find`, one round trip), fetches only new or changed files (`tar` over the same ssh
connection) into `.kit/mirror/<site>/results` beside sites.toml, and validates them here
with the same code as local results. Nothing of kit needs to be installed on the
frontend, and status, `kit run` (which pairs are pending) and `kit pull` share one copy.

A remote site's jobs cannot read the roster and benchmark on this machine: `kit run`
copies them to `<root>/inputs/` on the frontend, named by content digest (copied once).
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from kit.config.sites import Site
from kit.errors import ConfigError, SubmitError
from kit.launch.frontend import Frontend

if TYPE_CHECKING:
    from kit.launch.site import ResolvedSite

# what a results tree holds that kit copies: <language>/<run>.json checkpoints, their mllog and the
# signed statement a job may write beside them (<run>.intoto.jsonl, kit.results.store.ENVELOPE_SUFFIX)
_COPIED = (".json", ".mllog", ".intoto.jsonl")
_LIST = ('cd "$1" 2>/dev/null || exit 0; find . -mindepth 2 -maxdepth 2 -type f '
         '\\( -name "*.json" -o -name "*.mllog" -o -name "*.intoto.jsonl" \\) ! -name ".*" -printf "%P\\t%s\\t%T@\\n"')


@dataclass
class SyncReport:
    """What a copy of a results tree did."""

    source: str
    dest: Path
    listed: int = 0
    fetched: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


# what an empty path of a remote site could be instead (an example for the fix)
_EXAMPLE_PATHS = {"root": "/home/<login>/kit", "results": "/home/<login>/kit/results",
                  "images": "/home/<login>/kit/images", "scratch": "/tmp", "weights": "/home/<login>/hf-hub",
                  "python": "/home/<login>/kit/.venv/bin/python"}
# `~`, `~/x`, `~user/x`, `$HOME/x` and `${HOME}/x`: a home folder, which kit does not expand on the cluster
_HOME = re.compile(r"^(?:~(?P<user>[A-Za-z0-9._-]*)|\$HOME|\$\{HOME\})(?=/|$)/*")


def check_remote_paths(site: Site) -> None:
    """A ConfigError unless every path of a remote site is absolute (they are paths on the cluster);
    an empty one is no path at all."""
    for key in ("root", "results", "images", "scratch", "weights", "python"):
        value = getattr(site, key)
        if key == "images" and site.runtime not in ("apptainer", "pyxis", "enroot"):
            continue  # no image file to find
        if value is None or (key == "python" and value and "/" not in value):
            continue  # unset, or a command the cluster's PATH finds
        remote_path(site, key)


def remote_path(site: Site, key: str) -> str:
    """The remote site's folder `key` (root, results, images, ...), which must be an absolute path on
    the cluster; a ConfigError naming the absolute path meant otherwise."""
    value = getattr(site, key) or ""
    if value.startswith("/"):
        return value
    what = "is empty" if not value.strip() else "is relative"
    raise ConfigError(f"site {site.name}: {key} = {value!r} {what}, but the frontend is "
                      f"{site.frontend!r}: paths of a remote site are absolute paths on the cluster",
                      fix=f"write it absolute in [site.{site.name}], e.g. {key} = \"{absolute_example(key, value)}\"")


def absolute_example(key: str, value: str) -> str:
    """The absolute path a person most likely meant by a remote site's relative `value` for `key`:
    `~/kit` and `$HOME/kit` -> /home/<login>/kit; a relative root is in the home folder (where ssh
    starts), other relative paths in kit's folder (`results` -> /home/<login>/kit/results)."""
    home = _HOME.match(value)
    if home:
        return posixpath.normpath(posixpath.join(f"/home/{home['user'] or '<login>'}", value[home.end():]))
    if not value.strip() or posixpath.normpath(value) == "." or value.startswith("$"):
        return _EXAMPLE_PATHS[key]
    return posixpath.normpath(posixpath.join("/home/<login>" if key == "root" else "/home/<login>/kit", value))


def run_bytes(frontend: Frontend, argv: list[str], data: bytes = b"", timeout_s: int | None = None) -> bytes:
    """Run a command on the frontend with binary stdin and stdout; any failure is a SubmitError."""
    full = frontend.command(argv, {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"})
    try:
        proc = subprocess.run(full, input=data, capture_output=True, timeout=timeout_s or frontend.timeout_s * 5)
    except subprocess.TimeoutExpired:
        raise SubmitError(f"{frontend.where}: {argv[0]} did not finish in time",
                          fix="check the frontend and the network, then retry") from None
    err = proc.stderr.decode(errors="replace").strip()[-300:]
    if not frontend.is_local and proc.returncode == 255:
        raise SubmitError(f"cannot reach frontend {frontend.host!r} over ssh: {err}",
                          fix=f"check `ssh {frontend.host} true` works without a password (ssh-agent, ~/.ssh/config)")
    if proc.returncode != 0:
        raise SubmitError(f"{frontend.where}: {argv[0]} exited {proc.returncode}: {err}",
                          fix="check the path and permissions on the frontend")
    return proc.stdout


def list_tree(frontend: Frontend, remote: str) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime) of the checkpoints, logs and signed statements of a results tree ({} if
    absent)."""
    out = {}
    text = run_bytes(frontend, ["sh", "-c", _LIST, "sh", remote]).decode("utf-8", errors="replace")
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].isdigit():
            out[parts[0]] = (int(parts[1]), int(float(parts[2])))
    return out


def fetch_files(frontend: Frontend, remote: str, names: list[str], dest: Path) -> None:
    """Copy these files of `remote` into `dest` (one tar stream; mtimes kept; no path may leave dest)."""
    if not names:
        return
    data = run_bytes(frontend, ["tar", "-C", remote, "--null", "-T", "-", "-czf", "-"],
                     "\0".join(names).encode() + b"\0")
    wanted = set(names)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.lstrip("./") in wanted]
        dest.mkdir(parents=True, exist_ok=True)
        tar.extractall(dest, members=members, filter="data")


def _local_files(dest: Path) -> dict[str, tuple[int, int]]:
    out = {}
    if dest.is_dir():
        for p in dest.glob("*/*"):
            if p.is_file() and p.name.endswith(_COPIED) and not p.name.startswith("."):
                st = p.stat()
                out[p.relative_to(dest).as_posix()] = (st.st_size, int(st.st_mtime))
    return out


def sync_tree(frontend: Frontend, remote: str, dest: Path, *, delete: bool) -> SyncReport:
    """Make `dest` hold the remote tree's checkpoints: fetch new or changed files; with delete, drop the rest."""
    dest = Path(dest)
    theirs = list_tree(frontend, remote)
    ours = _local_files(dest)
    changed = sorted(n for n, meta in theirs.items() if ours.get(n) != meta)
    fetch_files(frontend, remote, changed, dest)
    report = SyncReport(f"{frontend.host}:{remote}", dest, len(theirs), changed)
    if delete:
        for name in sorted(set(ours) - set(theirs)):
            (dest / name).unlink(missing_ok=True)
            report.removed.append(name)
    return report


def sync_mirror(site: ResolvedSite) -> SyncReport:
    """Refresh the local mirror of a remote site's results tree (`site.mirror`)."""
    check_remote_paths(site.config)
    return sync_tree(site.frontend, site.config.results, site.mirror, delete=True)


def tree_digest(folder: Path) -> str:
    """sha256 over the relative names and contents of every non-hidden file under `folder`."""
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            h.update(rel.as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def staged_inputs(root: Path, roster: Path | None, benchmark: Path) -> tuple[Path | None, Path, dict[str, Path]]:
    """Where a remote site's jobs read the roster and benchmark (under root/inputs), and what to copy there."""
    inputs = PurePosixPath(str(root)) / "inputs"
    bench = inputs / f"benchmark-{tree_digest(benchmark)[:16]}"
    copies = {str(bench): benchmark}
    remote_roster = None
    if roster is not None:
        remote_roster = inputs / f"roster-{hashlib.sha256(roster.read_bytes()).hexdigest()[:16]}.toml"
        copies[str(remote_roster)] = roster
    return (Path(remote_roster) if remote_roster else None), Path(bench), copies


def upload_inputs(frontend: Frontend, copies: dict[str, Path]) -> None:
    """Copy each local file or folder to its path on the frontend, unless it is already there."""
    for remote, local in copies.items():
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(str(local), arcname="payload", recursive=True,
                    filter=lambda ti: None if PurePosixPath(ti.name).name.startswith(".") else ti)
        script = ('test -e "$1" && exit 0; tmp="$1.kit-tmp-$$"; mkdir -p "$tmp" && tar -xzf - -C "$tmp" '
                  '&& mkdir -p "$(dirname "$1")" && mv -f "$tmp/payload" "$1"; rc=$?; rm -rf "$tmp"; exit $rc')
        run_bytes(frontend, ["sh", "-c", script, "sh", remote], buf.getvalue())
