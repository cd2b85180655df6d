"""A site's staged weights, reached through its frontend: what is there (one round trip), copying
staged snapshots there (`kit weights push`), and hashing them there (`kit weights verify --site`).

The site's `weights` folder is a Hugging Face cache: `models--org--name/snapshots/<revision>/<file>`
(plain files), the manifest at `models--org--name/kit-manifests/<revision>.json`, and unfinished
copies under `models--org--name/.kit-parts/<revision>/`. Nothing of kit runs on the frontend: the
commands are sh, find, base64, stat, cat, mv and sha256sum, over the frontend's one shared ssh
connection (or run here for `frontend = "local"`).

Push protocol, per snapshot: list the site's files (sizes) and partial copies; stream each file that
is missing or of another size with `cat >>` onto its partial copy, starting where a partial copy
left off (so an interrupted push resumes); move each finished copy into the snapshot when its size is
right; hash every file of the snapshot there with sha256sum and compare with the manifest (a bad file
is removed, and the push fails naming it); write the manifest last, atomically. A snapshot whose
manifest there is this one and whose sizes match is left alone."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kit.launch.site import ResolvedSite
from kit.errors import ConfigError, KitError, SubmitError
from kit.files import file_sha256
from kit.launch.frontend import Frontend
from kit.launch.remote import run_bytes
from kit.launch.remote_copy import Show, remote_sha256, send_file
from kit.weights.manifest import (MANIFEST_DIR, PARTS_DIR, Manifest, hash_problems, manifest_text, parse_manifest,
                                  repo_dir_name, size_problems)

_PROBE = r'''root=$1; shift
for key in "$@"; do
  repo=${key%/*}; rev=${key##*/}
  printf 'R\t%s\0' "$key"
  m="$root/$repo/kit-manifests/$rev.json"
  if [ -f "$m" ]; then printf 'M\t'; base64 -w0 < "$m"; printf '\0'; fi
  if [ -d "$root/$repo/snapshots/$rev" ]; then (cd "$root/$repo/snapshots/$rev" && find -L . -type f -printf 'F\t%s\t%P\0'); fi
  if [ -d "$root/$repo/.kit-parts/$rev" ]; then (cd "$root/$repo/.kit-parts/$rev" && find . -type f -printf 'P\t%s\t%P\0'); fi
done'''
_FINISH = r'''snap=$1 parts=$2; shift 2
while [ $# -gt 1 ]; do
  name=$1 size=$2; shift 2
  got=$(stat -c %s "$parts/$name" 2>/dev/null || echo none)
  if [ "$got" != "$size" ]; then printf 'BAD\t%s\t%s\0' "$got" "$name"; continue; fi
  mkdir -p "$(dirname "$snap/$name")" && mv -f "$parts/$name" "$snap/$name" && printf 'OK\t%s\0' "$name"
done
rm -rf "$parts"; rmdir "$(dirname "$parts")" 2>/dev/null; exit 0'''
_REMOVE = 'cd "$1" 2>/dev/null || exit 0; xargs -0 rm -f --'


@dataclass
class SiteSnapshot:
    """One snapshot as the site has it: its manifest's text, its files' sizes and its partial copies."""

    manifest_text: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    parts: dict[str, int] = field(default_factory=dict)


@dataclass
class PushResult:
    """What pushing one snapshot did."""

    model: str
    revision: str
    state: str                  # "present" (nothing to do) or "pushed"
    sent: dict[str, int] = field(default_factory=dict)       # file -> bytes sent now
    resumed: dict[str, int] = field(default_factory=dict)    # file -> bytes a partial copy already had
    verified: int = 0           # files hashed on the far side
    seconds: float = 0.0

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"model": self.model, "revision": self.revision, "state": self.state, "sent": self.sent,
                "sent_bytes": sum(self.sent.values()), "resumed": self.resumed, "verified": self.verified,
                "seconds": round(self.seconds, 3)}


def weights_root(resolved: ResolvedSite) -> str:
    """The site's `weights` folder as its frontend sees it; a ConfigError when the site has none."""
    site = resolved.config
    if not site.weights:
        raise ConfigError(f"site {site.name} has no `weights` folder in sites.toml, so kit cannot place weights there "
                          "and its jobs would find none offline",
                          fix=f"add weights = \"/home/<login>/hf-hub\" (a path on the cluster) to [site.{site.name}]")
    if site.is_remote:
        from kit.launch.remote import remote_path

        return remote_path(site, "weights")
    return str(resolved.paths.weights)


def _repo(root: str, model: str) -> PurePosixPath:
    return PurePosixPath(root) / repo_dir_name(model)


def remote_snapshot_dir(root: str, model: str, revision: str) -> str:
    """The snapshot folder on the site."""
    return str(_repo(root, model) / "snapshots" / revision)


def remote_manifest_path(root: str, model: str, revision: str) -> str:
    """The manifest path on the site."""
    return str(_repo(root, model) / MANIFEST_DIR / f"{revision}.json")


def probe(frontend: Frontend, root: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], SiteSnapshot]:
    """What the site holds of each (model, revision), in one command on the frontend."""
    if not keys:
        return {}
    args = [f"{repo_dir_name(m)}/{r}" for m, r in keys]
    out = run_bytes(frontend, ["sh", "-c", _PROBE, "sh", root, *args])
    by_arg = {f"{repo_dir_name(m)}/{r}": (m, r) for m, r in keys}
    found: dict[tuple[str, str], SiteSnapshot] = {k: SiteSnapshot() for k in keys}
    current: SiteSnapshot | None = None
    for record in out.split(b"\0"):
        kind, _, rest = record.decode("utf-8", errors="replace").partition("\t")
        if kind == "R":
            current = found.get(by_arg.get(rest, ("", "")))
        elif current is None:
            continue
        elif kind == "M":
            current.manifest_text = base64.b64decode(rest).decode("utf-8", errors="replace")
        elif kind in ("F", "P"):
            size, _, name = rest.partition("\t")
            if size.isdigit():
                (current.sizes if kind == "F" else current.parts)[name] = int(size)
    return found


def push_snapshot(frontend: Frontend, root: str, cache: Path, manifest: Manifest, there: SiteSnapshot,
                  show: Show) -> PushResult:
    """Copy one staged snapshot to the site (see the module doc); returns what was done."""
    from kit.weights.manifest import snapshot_dir

    t0 = time.monotonic()
    model, revision = manifest.model, manifest.revision
    result = PushResult(model, revision, "present")
    current = None
    if there.manifest_text is not None:
        try:
            current = parse_manifest(there.manifest_text, remote_manifest_path(root, model, revision))
        except ConfigError:
            current = None   # replaced below
    if current is not None and current.digest == manifest.digest and not size_problems(manifest, there.sizes):
        show(f"{model}@{revision[:12]}: already at {frontend.where}:{root} (manifest {manifest.digest[:12]})")
        result.seconds = time.monotonic() - t0
        return result
    local = snapshot_dir(cache, model, revision)
    snap = remote_snapshot_dir(root, model, revision)
    parts = str(_repo(root, model) / PARTS_DIR / revision)
    todo = sorted(n for n, e in manifest.files.items() if there.sizes.get(n) != e.size)
    size = sum(manifest.files[n].size for n in todo)
    show(f"{model}@{revision[:12]}: {len(todo)} of {len(manifest.files)} files to copy ({size / 1e6:.1f} MB) "
         f"to {frontend.where}:{snap}")
    for name in todo:
        have = there.parts.get(name, 0)
        if have > manifest.files[name].size:
            have = 0   # not a prefix of this file: start again
        if have:
            result.resumed[name] = have
        result.sent[name] = send_file(frontend, local / name, f"{parts}/{name}", have, show, name, "kit weights push")
    if todo:
        args = [a for n in todo for a in (n, str(manifest.files[n].size))]
        out = run_bytes(frontend, ["sh", "-c", _FINISH, "sh", snap, parts, *args])
        bad = [r.decode(errors="replace").split("\t") for r in out.split(b"\0") if r.startswith(b"BAD")]
        if bad:
            raise SubmitError(f"{frontend.where}: copies of {', '.join(b[-1] for b in bad)} have the wrong size there",
                              fix="run the same `kit weights push` again")
    show(f"{model}@{revision[:12]}: checking sha256 of {len(manifest.files)} files at {frontend.where} ...")
    digests = remote_sha256(frontend, snap, sorted(manifest.files), manifest.total_bytes)
    result.verified = len(digests)
    wrong = [n for n, e in manifest.files.items() if digests.get(n) != e.sha256]
    if wrong:
        run_bytes(frontend, ["sh", "-c", _REMOVE, "sh", snap], "\0".join(wrong).encode() + b"\0")
        damaged = sorted(n for n in wrong if file_sha256(local / n) != manifest.files[n].sha256)
        if damaged:   # the copy sent was the local one's bytes: sending it again would change nothing
            raise SubmitError(f"{', '.join(damaged)} of {model}@{revision[:12]} is damaged here, in {local}: its sha256 "
                              "is not the manifest's (removed at the site)",
                              fix=f"kit weights verify --model {model}, then `kit weights stage` again to fetch it anew")
        raise SubmitError(f"{frontend.where}: {', '.join(sorted(wrong))} of {model}@{revision[:12]} did not hash to the "
                          "manifest's sha256 there (removed)", fix="run the same `kit weights push` again to copy them anew")
    frontend.write_text(remote_manifest_path(root, model, revision), manifest_text(manifest), mode=0o644)
    result.state = "pushed"
    result.seconds = time.monotonic() - t0
    show(f"{model}@{revision[:12]}: pushed and verified ({sum(result.sent.values()) / 1e6:.1f} MB sent, "
         f"{result.seconds:.1f}s)")
    return result


@dataclass
class SiteVerify:
    """One snapshot on a site hashed against its manifest there."""

    model: str
    revision: str
    where: str
    digest: str | None
    files: int
    problems: list[str]

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"model": self.model, "revision": self.revision, "where": self.where, "manifest_sha256": self.digest,
                "files": self.files, "ok": not self.problems, "problems": self.problems}


def verify_on_site(frontend: Frontend, root: str, keys: list[tuple[str, str]], show: Show) -> list[SiteVerify]:
    """Hash every file of each snapshot on the site and compare with the site's manifest."""
    out = []
    for key, there in probe(frontend, root, keys).items():
        model, revision = key
        where = f"{frontend.where}:{remote_snapshot_dir(root, model, revision)}"
        if there.manifest_text is None:
            out.append(SiteVerify(model, revision, where, None, 0, ["no weights manifest there: not pushed"]))
            continue
        try:
            manifest = parse_manifest(there.manifest_text, remote_manifest_path(root, model, revision))
        except KitError as exc:
            out.append(SiteVerify(model, revision, where, None, 0, [exc.message]))
            continue
        problems = size_problems(manifest, there.sizes)
        if not problems:
            show(f"{model}@{revision[:12]}: hashing {len(manifest.files)} files at {frontend.where} ...")
            digests = remote_sha256(frontend, remote_snapshot_dir(root, model, revision), sorted(manifest.files),
                                    manifest.total_bytes)
            problems = hash_problems(manifest, digests)
        out.append(SiteVerify(model, revision, where, manifest.digest, len(manifest.files), problems))
    return out
