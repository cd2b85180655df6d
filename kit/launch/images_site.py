"""A site's image artifacts, reached through its frontend: what its `images` folder holds (one round
trip), copying the lock's artifacts there (`kit images push`), and which files there no lock entry or
result needs (`kit images status`, `kit images prune`).

A site's runtime reads one form: a SIF (apptainer) or an Enroot sqsh (pyxis, enroot). The folder holds
whole, checked files only: a copy streams onto `.kit-parts/<file>` (from where an earlier copy stopped),
is hashed there with sha256sum, and is renamed into place only when it has the lock's sha256. Before any
byte moves, the bytes still to send are checked against the folder's free space and, where `quota`
answers on the frontend, the user's quota on that filesystem (Grid'5000 homes have one)."""

from __future__ import annotations

import base64
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kit.config.sites import Site
from kit.errors import ConfigError, ImageError, SubmitError
from kit.files import name_part
from kit.images.built import Artifact, ImagesLock
from kit.launch.frontend import Frontend
from kit.launch.remote import run_bytes
from kit.launch.remote_copy import Show, hash_timeout, send_file, size_text
from kit.launch.site import ResolvedSite

FORM_OF_RUNTIME = {"apptainer": "sif", "pyxis": "sqsh", "enroot": "sqsh"}
PARTS = ".kit-parts"
# kit.images.convert.artifact_name: kit-<backend>[-<variant>]-<12 hex of the image id>.<form>
_ARTIFACT_NAME = re.compile(r"^kit-(?P<stem>.+)-(?P<id>[0-9a-f]{12})\.(?P<form>sif|sqsh)\Z")

_PROBE = r'''root=$1
d=$root; while [ ! -d "$d" ]; do d=$(dirname "$d"); done
printf 'D\t%s\0' "$(df -Pk "$d" 2>/dev/null | awk 'NR==2 {print $1 "\t" $4}')"
if command -v quota >/dev/null 2>&1; then printf 'Q\t'; quota -w 2>/dev/null | base64 -w0; printf '\0'; fi
if [ -d "$root" ]; then (cd "$root" && find . -maxdepth 1 -type f -printf 'F\t%s\t%f\0'); fi
if [ -d "$root/.kit-parts" ]; then (cd "$root/.kit-parts" && find . -maxdepth 1 -type f -printf 'P\t%s\t%f\0'); fi
exit 0'''
_SUM = 'sha256sum < "$1" 2>/dev/null | cut -c1-64'
_FINISH = r'''root=$1 name=$2 sha=$3 size=$4
part="$root/.kit-parts/$name"
got=$(stat -c %s "$part" 2>/dev/null || echo none)
if [ "$got" != "$size" ]; then printf 'SIZE\t%s' "$got"; exit 0; fi
sum=$(sha256sum < "$part" | cut -c1-64)
if [ "$sum" != "$sha" ]; then rm -f "$part"; printf 'SHA\t%s' "$sum"; exit 0; fi
chmod 644 "$part" && mv -f "$part" "$root/$name" && printf 'OK'
rmdir "$root/.kit-parts" 2>/dev/null; exit 0'''
_REMOVE = 'cd "$1" || exit 1; shift; rm -f -- "$@"; rmdir .kit-parts 2>/dev/null; exit 0'


@dataclass
class SiteImages:
    """What a site's images folder holds: its files' sizes, its partial copies, and room to write."""

    root: str
    files: dict[str, int] = field(default_factory=dict)
    parts: dict[str, int] = field(default_factory=dict)
    free_bytes: int | None = None        # the filesystem's available bytes (df)
    quota_bytes: int | None = None       # the user's quota left on that filesystem, when `quota` says
    quota_note: str = ""

    @property
    def room(self) -> int | None:
        """Bytes that can still be written there (the lower of free space and quota left)."""
        known = [b for b in (self.free_bytes, self.quota_bytes) if b is not None]
        return min(known) if known else None

    def room_text(self) -> str:
        """The free space and quota, said plainly."""
        parts = [f"{size_text(self.free_bytes)} free on its filesystem" if self.free_bytes is not None
                 else "free space unknown (df did not answer)"]
        if self.quota_note:
            parts.append(self.quota_note)
        return ", ".join(parts)


def artifact_form(site: Site) -> str:
    """The artifact form the site's runtime reads (sif or sqsh); a ConfigError for a runtime that reads
    no image file (docker images are loaded into the host's engine; the host runtime has none)."""
    form = FORM_OF_RUNTIME.get(site.runtime)
    if form is None:
        fix = ("load the image on the host that runs the jobs (kit images save NAME, then docker load -i FILE)"
               if site.runtime == "docker" else "the host runtime runs kit from the site's python: no image to push")
        raise ConfigError(f"site {site.name} has runtime {site.runtime!r}, which reads no SIF or sqsh file", fix=fix)
    return form


def images_root(resolved: ResolvedSite) -> str:
    """The site's `images` folder as its frontend sees it (absolute on a remote site, else a ConfigError)."""
    site = resolved.config
    if site.is_remote:
        from kit.launch.remote import remote_path

        return remote_path(site, "images")
    return str(resolved.paths.images)


def _quota_room(text: str, device: str) -> tuple[int | None, str]:
    """(bytes the user may still write on `device`, how it was read) from `quota -w` output (1 KiB
    blocks; a used value over the soft limit is marked `*`); (None, "") when no line is for `device`."""
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 4 or cols[0] != device:
            continue
        try:
            used, soft, hard = (int(c.rstrip("*")) for c in cols[1:4])
        except ValueError:
            continue
        limit = min((x for x in (soft, hard) if x > 0), default=0)
        if not limit:
            return None, ""
        left = max(0, limit - used) * 1024
        return left, f"quota {size_text(limit * 1024)} with {size_text(used * 1024)} used (`quota`)"
    return None, ""


def probe_images(frontend: Frontend, root: str) -> SiteImages:
    """What the site's images folder holds and how much can be written there, in one command."""
    out = run_bytes(frontend, ["sh", "-c", _PROBE, "sh", root])
    found, device, quota_text = SiteImages(root), None, ""
    for record in out.split(b"\0"):
        kind, _, rest = record.decode("utf-8", errors="replace").partition("\t")
        if kind == "D":
            dev, _, avail = rest.partition("\t")
            device = dev or None
            found.free_bytes = int(avail) * 1024 if avail.strip().isdigit() else None
        elif kind == "Q":
            try:
                quota_text = base64.b64decode(rest).decode("utf-8", errors="replace")
            except ValueError:
                quota_text = ""
        elif kind in ("F", "P"):
            size, _, name = rest.partition("\t")
            if size.isdigit() and name:
                (found.files if kind == "F" else found.parts)[name] = int(size)
    if device and quota_text:
        found.quota_bytes, found.quota_note = _quota_room(quota_text, device)
    return found


def lock_artifact(lock: ImagesLock, backend: str, form: str, lock_path: Path) -> Artifact:
    """The backend's artifact of this form in the lock (an ImageError naming the build or convert
    command when there is none), its file name checked as one plain name."""
    art = lock.get(backend, lock_path).artifact(form)
    name_part(art.file, f"artifact file name in {lock_path}")
    return art


@dataclass
class PushedImage:
    """What pushing one artifact to a site did."""

    site: str
    backend: str
    file: str
    state: str                  # "present" (the site had it, same sha256) or "pushed"
    bytes: int
    sent: int = 0
    resumed: int = 0
    replaced: bool = False      # the site had a file of that name with another sha256
    seconds: float = 0.0

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"site": self.site, "backend": self.backend, "file": self.file, "state": self.state,
                "bytes": self.bytes, "sent_bytes": self.sent, "resumed_bytes": self.resumed,
                "replaced": self.replaced, "seconds": round(self.seconds, 3)}


def _sum_there(frontend: Frontend, path: str, size: int) -> str:
    """sha256 of one file on the frontend ('' when it cannot be read)."""
    return run_bytes(frontend, ["sh", "-c", _SUM, "sh", path], timeout_s=hash_timeout(size)).decode().strip()


def push_images(resolved: ResolvedSite, wanted: list[tuple[str, Artifact]], local_dir: Path, show: Show,
                again: str) -> list[PushedImage]:
    """Copy each (backend, artifact) from `local_dir` to the site's images folder unless a file there
    already has its sha256 (see the module doc). `again` is the command that resumes a stopped push."""
    root, frontend, site = images_root(resolved), resolved.frontend, resolved.name
    sizes = {}
    for backend, art in wanted:
        local = Path(local_dir) / art.file
        if not local.is_file():
            raise ImageError(f"{local} is not here: the {backend} artifact the lock records was not made in "
                             f"{local_dir}", fix=f"kit images convert {backend} --to {Path(art.file).suffix[1:]} "
                             f"--out {local_dir} (or pass the folder that holds it with --out)")
        sizes[art.file] = local.stat().st_size
        if art.bytes is not None and art.bytes != sizes[art.file]:
            raise ImageError(f"{local} has {sizes[art.file]} bytes, the lock records {art.bytes}: it is not the "
                             "artifact the lock names", fix=f"kit images convert {backend} --force")
    there = probe_images(frontend, root)
    results, todo = [], []
    for backend, art in wanted:
        size = sizes[art.file]
        have = there.files.get(art.file)
        if have == size and _sum_there(frontend, f"{root}/{art.file}", size) == art.sha256:
            show(f"{site}: {art.file} already there ({size_text(size)}, sha256 {art.sha256[:12]})")
            results.append(PushedImage(site, backend, art.file, "present", size))
            continue
        todo.append((backend, art, have is not None))
    need = sum(sizes[a.file] - _resumable(there, a.file, sizes[a.file]) for _, a, _ in todo)
    room = there.room
    if todo and room is not None and need > room:
        raise SubmitError(f"site {site}: the images to copy need {size_text(need)} more in {root}, which has "
                          f"{size_text(room)} left ({there.room_text()}); nothing was copied",
                          fix=f"free space there (kit images prune --site {site} lists what no lock entry or result "
                              "needs), or point the site's `images` at a larger filesystem in sites.toml")
    for backend, art, replacing in todo:
        t0 = time.monotonic()
        size, offset = sizes[art.file], _resumable(there, art.file, sizes[art.file])
        show(f"{site}: copying {art.file} ({size_text(size)}) to {frontend.where}:{root}"
             + (f", resuming at {size_text(offset)}" if offset else "")
             + (" (replacing a file of that name with another sha256)" if replacing else ""))
        sent = send_file(frontend, Path(local_dir) / art.file, f"{root}/{PARTS}/{art.file}", offset, show,
                         art.file, again)
        show(f"{site}: checking sha256 of {art.file} at {frontend.where} ...")
        verdict = run_bytes(frontend, ["sh", "-c", _FINISH, "sh", root, art.file, art.sha256, str(size)],
                            timeout_s=hash_timeout(size)).decode(errors="replace")
        if verdict != "OK":
            kind, _, detail = verdict.partition("\t")
            why = (f"has {detail} bytes there, not {size}" if kind == "SIZE"
                   else f"hashed to {detail[:12]} there, not the lock's {art.sha256[:12]} (the copy was removed)")
            raise SubmitError(f"site {site}: the copy of {art.file} {why}", fix=f"run the same `{again}` again")
        results.append(PushedImage(site, backend, art.file, "pushed", size, sent, offset, replacing,
                                   time.monotonic() - t0))
        show(f"{site}: {art.file} in place and checked ({size_text(sent)} sent)")
    return results


def _resumable(there: SiteImages, file: str, size: int) -> int:
    """Bytes of a partial copy there that a push continues from (0 when longer than the file)."""
    have = there.parts.get(file, 0)
    return have if have <= size else 0


@dataclass(frozen=True)
class SiteImageEntry:
    """One file of a site's images folder, or one artifact the lock names for the site that is not there.
    `state`: current (the lock's artifact for this site's form), mismatch (its file name with another
    size than the lock records: a half copy or another build; push replaces it), stale (another build
    of a backend the lock has), other (not this form, or no backend the lock has), foreign (not named as kit names
    artifacts), partial (an unfinished copy), missing (named by the lock, not there)."""

    file: str
    state: str
    bytes: int | None
    backend: str | None
    needed_by_results: int = 0     # checkpoints in the site's results that ran in this image

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"file": self.file, "state": self.state, "bytes": self.bytes, "backend": self.backend,
                "needed_by_results": self.needed_by_results}


def _backend_of(file: str, backends: list[str]) -> str | None:
    """The backend a file named like kit's artifacts is of (the longest backend name its stem starts with)."""
    match = _ARTIFACT_NAME.match(file)
    if not match:
        return None
    stem = match["stem"]
    fits = [b for b in backends if stem == b or stem.startswith(b + "-")]
    return max(fits, key=len) if fits else None


def image_entries(there: SiteImages, lock: ImagesLock, form: str, result_ids: dict[str, int]) -> list[SiteImageEntry]:
    """Every file of the site's images folder judged against the lock, and the lock's artifacts missing
    there. `result_ids` maps the first 12 hex digits of an image id to how many of the site's results
    ran in that image."""
    from kit.config.backends import BACKENDS

    named = {a.file for b in lock.images.values() for a in b.artifacts.values()}
    current = {b.artifacts[form].file: name for name, b in lock.images.items() if form in b.artifacts}
    out = []
    for file, size in sorted(there.files.items()):
        match = _ARTIFACT_NAME.match(file)
        backend = _backend_of(file, sorted(set(BACKENDS) | set(lock.images)))
        used = result_ids.get(match["id"], 0) if match else 0
        if file in current:
            recorded = lock.images[current[file]].artifacts[form].bytes
            state = "mismatch" if recorded is not None and recorded != size else "current"
        elif not match:
            state = "foreign"
        elif file in named or match["form"] != form or backend not in lock.images:
            state = "other"
        else:
            state = "stale"
        out.append(SiteImageEntry(file, state, size, backend or current.get(file), used))
    out += [SiteImageEntry(f"{PARTS}/{file}", "partial", size, _backend_of(file, list(lock.images)))
            for file, size in sorted(there.parts.items())]
    out += [SiteImageEntry(file, "missing", lock.images[b].artifacts[form].bytes, b)
            for file, b in sorted(current.items()) if file not in there.files]
    return out


def prunable(entries: list[SiteImageEntry], lock: ImagesLock) -> list[SiteImageEntry]:
    """The files `kit images prune` removes: kit's artifacts that no lock entry names and no result of
    the site ran in, and unfinished copies of files the lock does not name (foreign files are kept)."""
    named = {a.file for b in lock.images.values() for a in b.artifacts.values()}
    out = []
    for e in entries:
        if e.state == "partial":
            if PurePosixPath(e.file).name not in named:
                out.append(e)
        elif e.state in ("stale", "other") and e.file not in named and not e.needed_by_results:
            out.append(e)
    return out


def remove_images(frontend: Frontend, root: str, files: list[str]) -> None:
    """Remove these files (names relative to the images folder) from the site."""
    for f in files:
        parts = f.split("/")
        if not (len(parts) == 1 or (len(parts) == 2 and parts[0] == PARTS)):
            raise ConfigError(f"refusing to remove {f!r}: not a file of the images folder", fix="report this")
        name_part(parts[-1], "image file name")
    if files:
        run_bytes(frontend, ["sh", "-c", _REMOVE, "sh", root, *files])


def result_image_ids(results: Path) -> dict[str, int]:
    """The first 12 hex digits of each image id the checkpoints of a results tree ran in, with how many."""
    from kit.results import keys
    from kit.results.cache import CheckpointCache
    from kit.results.store import iter_checkpoint_files

    cache = CheckpointCache.open(results)
    counts: dict[str, int] = {}
    for state in cache.validate_all([(p, {}) for p in iter_checkpoint_files(results)]):
        prov = (state.data or {}).get(keys.PROVENANCE)
        image = prov.get(keys.PROV_IMAGE) if isinstance(prov, dict) else None
        digest = image.get(keys.IMAGE_DIGEST) if isinstance(image, dict) else None
        if isinstance(digest, str) and digest.startswith("sha256:") and len(digest) >= 19:
            counts[digest[7:19]] = counts.get(digest[7:19], 0) + 1
    cache.save()
    return counts


def push_command(site: str, backends: list[str], *, sites_file: Path | None = None,
                 lock_file: Path | None = None) -> str:
    """The `kit images push` command that puts these backends' artifacts at the site."""
    argv = ["kit", "images", "push", "--site", site]
    if sites_file is not None and str(sites_file) != "sites.toml":
        argv += ["--sites-file", str(sites_file)]
    if lock_file is not None and str(lock_file) != "containers/images.lock.json":
        argv += ["--lock-file", str(lock_file)]
    return shlex.join([*argv, *dict.fromkeys(backends)])
