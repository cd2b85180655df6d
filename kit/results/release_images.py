"""Images carried by a published release, for a reviewer with no Docker and no build.

`kit publish --with-images FORMS` uploads, beside the release, each image artifact (SIF, sqsh or
docker archive) that the release's checkpoints ran in, under `images/`, with `images/manifest.json`
(one entry per file: backend, form, sha256, size and the lock entry of its image) and a section of
the dataset card that lists every file's sha256. `kit images pull REPO` reads the manifest, checks
that the card lists the same sha256, downloads the file, hashes it, and records its lock entry in the
reviewer's images lock, where `kit reproduce` finds it (the SIF or sqsh by sha256, for the image id
the result records)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from kit import safejson
from kit.errors import DISK_ERRNOS, ConfigError, ImageError, KitError, service_error
from kit.files import file_sha256, name_part, read_regular_file
from kit.images.built import BuiltImage, ImagesLock

MANIFEST = "images/manifest.json"
FORMS = ("sif", "sqsh", "tar")
CARD_HEADING = "## Images in this repository"
MANIFEST_LIMIT_BYTES = 4 << 20
CARD_LIMIT_BYTES = 64 << 20


class PublishedImage(BaseModel):
    """One image file of a published release."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    form: str
    path_in_repo: str
    sha256: str
    bytes: int
    image: BuiltImage            # the lock entry of its image, with this artifact only


class ImagesManifest(BaseModel):
    """images/manifest.json of a published release."""

    model_config = ConfigDict(extra="forbid")

    kit_images_manifest_version: int = 1
    images: list[PublishedImage]


@dataclass(frozen=True)
class ImageUpload:
    """An image file to publish: its manifest entry and the file here."""

    entry: PublishedImage
    local: Path


def parse_forms(text: str) -> tuple[str, ...]:
    """'sif,tar' -> ('sif', 'tar'); a ConfigError for anything but sif, sqsh and tar."""
    forms = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    bad = [f for f in forms if f not in FORMS]
    if bad or not forms:
        raise ConfigError(f"--with-images {text!r}: {', '.join(bad) or 'no form'} is not one of {', '.join(FORMS)}",
                          fix="pass the forms the reviewers' runtimes read, e.g. --with-images sif,tar")
    return forms


def release_images(release: Path) -> dict[str, tuple[str, dict[str, set[str]]]]:
    """image id -> (backend, {artifact form the results ran in: its recorded sha256s}) over the
    checkpoints of a release folder (checkpoints/<language>/<run>.json); host-runtime results name none."""
    from kit.results import keys
    from kit.results.store import iter_checkpoint_files

    found: dict[str, tuple[str, dict[str, set[str]]]] = {}
    folder = Path(release) / "checkpoints"
    for path in iter_checkpoint_files(folder) if folder.is_dir() else ():
        try:
            data = safejson.loads(read_regular_file(path, "a checkpoint", 1 << 30).decode("utf-8"))
        except (ConfigError, ValueError) as exc:
            raise ConfigError(f"{path}: not a readable checkpoint ({exc})", fix="write the release again: kit release")
        image = ((data or {}).get(keys.PROVENANCE) or {}).get(keys.PROV_IMAGE) or {}
        digest, backend = image.get(keys.IMAGE_DIGEST), image.get(keys.IMAGE_BACKEND)
        if not (isinstance(digest, str) and digest.startswith("sha256:") and isinstance(backend, str)):
            continue
        _, forms = found.setdefault(digest, (backend, {}))
        form, sha = image.get(keys.IMAGE_ARTIFACT), image.get(keys.IMAGE_ARTIFACT_SHA256)
        if isinstance(form, str) and isinstance(sha, str):
            forms.setdefault(form, set()).add(sha)
    return found


def plan_image_uploads(release: Path, forms: tuple[str, ...], lock: ImagesLock, lock_path: Path, images_dir: Path,
                       say: Callable[[str], None] = lambda msg: None) -> list[ImageUpload]:
    """The image files a release publishes: for each image its checkpoints ran in, the artifact of each
    form the lock records for that image id, found in `images_dir` and hashed; an ImageError (nothing
    uploaded) for an image the lock does not hold, a form not made, a file missing or different, or an
    artifact that is not the one the results ran in."""
    used = release_images(release)
    if not used:
        raise ConfigError(f"{release}: no checkpoint of the release ran in an image (host runtime only)",
                          fix="publish without --with-images")
    uploads = []
    for digest, (backend, ran_in) in sorted(used.items(), key=lambda kv: kv[1][0]):
        built = lock.images.get(backend)
        if built is None or built.image_id != digest:
            held = f"records {built.image_id[:19]}" if built else "has no entry"
            raise ImageError(f"the release's {backend} results ran in image {digest[:19]}, but for {backend} the lock "
                             f"{lock_path} {held}", fix="publish from the checkout whose lock built that image "
                             "(--lock-file), or publish without --with-images")
        for form in forms:
            art = built.artifacts.get(form)
            if art is None:
                make = f"kit images save {backend}" if form == "tar" else f"kit images convert {backend} --to {form}"
                raise ImageError(f"the lock {lock_path} has no {form} of {backend} (image {digest[:19]})", fix=make)
            recorded = ran_in.get(form)
            if recorded and art.sha256 not in recorded:
                raise ImageError(f"the {form} of {backend} the lock names (sha256 {art.sha256[:12]}) is not the one "
                                 f"the release's results ran in ({', '.join(sorted(s[:12] for s in recorded))}): a "
                                 "conversion is not byte-reproducible", fix="publish the file the results ran in "
                                 "(the lock of the sweep, --lock-file), or leave that form out of --with-images")
            local = Path(images_dir) / name_part(art.file, f"artifact file name in {lock_path}")
            if not local.is_file():
                raise ImageError(f"{local} is not here (the {form} of {backend} the lock records)",
                                 fix=f"pass --images-dir with the folder that holds it, or make it again "
                                     f"({'kit images save' if form == 'tar' else 'kit images convert'} {backend})")
            say(f"hashing {local} ({local.stat().st_size / 1e6:.1f} MB) ...")
            sha = file_sha256(local)
            if sha != art.sha256:
                raise ImageError(f"{local} has sha256 {sha[:12]}, the lock records {art.sha256[:12]}",
                                 fix=f"make it again (kit images {'save' if form == 'tar' else 'convert'} {backend} "
                                     "--force), or pass the folder that holds the recorded file")
            image = built.model_copy(update={"artifacts": {form: art}})
            uploads.append(ImageUpload(PublishedImage(backend=backend, form=form, path_in_repo=f"images/{art.file}",
                                                      sha256=art.sha256, bytes=local.stat().st_size, image=image),
                                       local))
    return uploads


def manifest_bytes(uploads: list[ImageUpload]) -> bytes:
    """images/manifest.json for these uploads (sorted keys, a final newline)."""
    manifest = ImagesManifest(images=[u.entry for u in uploads])
    return (json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n").encode()


def card_with_images(card: str, uploads: list[ImageUpload], repo_id: str) -> str:
    """The dataset card with a section listing each image file, its sha256, and the pull command."""
    from kit.results.tables import md_code

    rows = "\n".join(f"| {u.entry.backend} | {u.entry.form} | {md_code(u.entry.path_in_repo)} | "
                     f"{md_code(u.entry.sha256)} | {u.entry.bytes:,} | {md_code(u.entry.image.image_id)} |"
                     for u in uploads)
    section = (f"\n{CARD_HEADING}\n\nThe images the results ran in, for a rerun with no Docker and no build "
               "(`images/manifest.json` lists the same files with their lock entries):\n\n"
               "| backend | form | file | sha256 | bytes | image digest |\n|---|---|---|---|---|---|\n"
               f"{rows}\n\n```bash\nkit images pull {repo_id} --form sif     # checked against this table, "
               "recorded in the images lock\nkit reproduce checkpoints/<language>/<run>.json --runtime apptainer\n```\n")
    return card.rstrip("\n") + "\n" + section


def read_manifest(path: Path, where: str) -> ImagesManifest:
    """A downloaded images/manifest.json; a ConfigError naming `where` when it is not one."""
    try:
        return ImagesManifest.model_validate(safejson.loads(
            read_regular_file(path, "an images manifest", MANIFEST_LIMIT_BYTES).decode("utf-8")))
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{where}: {MANIFEST} is not an images manifest ({first})",
                          fix="publish the release again with kit publish --with-images") from None


def card_lists(card: str, entry: PublishedImage) -> bool:
    """Whether the card's images section lists this file with this sha256."""
    _, _, section = card.partition(CARD_HEADING)
    return any(entry.path_in_repo in line and entry.sha256 in line for line in section.splitlines())


@dataclass(frozen=True)
class PulledImage:
    """One image file pulled from a published release."""

    backend: str
    form: str
    file: Path
    sha256: str
    bytes: int
    image_id: str
    recorded_in: Path | None     # the images lock that now names it (None for a docker archive)

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"backend": self.backend, "form": self.form, "file": str(self.file), "sha256": self.sha256,
                "bytes": self.bytes, "image_id": self.image_id,
                "recorded_in": str(self.recorded_in) if self.recorded_in else None}


def choose_entries(manifest: ImagesManifest, names: list[str], form: str, repo_id: str) -> list[PublishedImage]:
    """The manifest's files of this form for the named backends (every backend when none is named); a
    ConfigError naming what the release carries when a name or the form is not there."""
    carried = sorted({(e.backend, e.form) for e in manifest.images})
    listing = ", ".join(f"{b} ({f})" for b, f in carried) or "nothing"
    chosen = [e for e in manifest.images if e.form == form and (not names or e.backend in names)]
    missing = [n for n in names if not any(e.backend == n for e in chosen)]
    if missing or not chosen:
        what = f"no {form} of {', '.join(missing)}" if missing else f"no {form} file"
        raise ConfigError(f"{repo_id}: the release carries {what}; it carries {listing}",
                          fix="pull a form and image it carries (--form sif|sqsh|tar)")
    for e in chosen:
        name_part(e.backend, f"backend name in {repo_id}'s {MANIFEST}")
        name_part(Path(e.path_in_repo).name, f"file name in {repo_id}'s {MANIFEST}")
        if e.path_in_repo != f"images/{Path(e.path_in_repo).name}":
            raise ConfigError(f"{repo_id}: {MANIFEST} names {e.path_in_repo!r}, not a file of images/",
                              fix="publish the release again with kit publish --with-images")
    return chosen


def record_pulled(lock: ImagesLock, entry: PublishedImage, lock_path: Path) -> str:
    """Put the pulled artifact's lock entry into `lock`: a new backend entry, or the artifact added to the
    entry of the same image id. An ImageError when the lock holds another build of that backend."""
    held = lock.images.get(entry.backend)
    if held is None:
        lock.images[entry.backend] = entry.image
        return "added"
    if held.image_id != entry.image.image_id:
        raise ImageError(f"the lock {lock_path} holds another build of {entry.backend} ({held.image_id[:19]}, the "
                         f"release's is {entry.image.image_id[:19]})",
                         fix=f"pull into a lock of its own: --lock-file pulled.lock.json, then kit reproduce "
                             "--images-lock pulled.lock.json")
    held.artifacts[entry.form] = entry.image.artifacts[entry.form]
    return "artifact added"


PULL_AGAIN = "check the network, HF_ENDPOINT and the repo id (and the token for a private one), then pull again"


def pull_images(repo_id: str, names: list[str], form: str, out_dir: Path, lock_path: Path, *,
                revision: str | None = None, endpoint: str | None = None, token: str | None = None,
                say: Callable[[str], None] = lambda msg: None) -> list[PulledImage]:
    """Download the release's image files of `form` (for `names`, or all) into `out_dir`, each checked
    against the manifest and the card and hashed, and record each SIF/sqsh in the images lock."""
    import os

    from huggingface_hub import constants, hf_hub_download

    from kit.images.built import load_lock, update_lock

    if constants.HF_HUB_OFFLINE:   # (its client would only say the file is not in a local cache)
        raise ConfigError(f"pulling {repo_id} needs the Hub at {endpoint or 'the Hugging Face Hub'}, and "
                          "huggingface_hub is in offline mode (HF_HUB_OFFLINE)",
                          fix="unset HF_HUB_OFFLINE, then pull again")

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    staging = Path(out_dir) / ".kit-pull"
    get = dict(repo_id=repo_id, repo_type="dataset", revision=revision, endpoint=endpoint, token=token,
               local_dir=staging)

    def download(filename: str) -> Path:
        try:
            return Path(hf_hub_download(filename=filename, **get))
        except KitError:
            raise
        except OSError as exc:
            if exc.errno in DISK_ERRNOS and exc.filename:   # this machine's disk: said as every command says it
                raise
            raise service_error(exc, f"pulling {filename} of {repo_id}", endpoint or "the Hugging Face Hub",
                                fix=PULL_AGAIN) from None
        except Exception as exc:   # noqa: BLE001 - the Hub's client and its HTTP library raise many kinds: one line
            raise service_error(exc, f"pulling {filename} of {repo_id}", endpoint or "the Hugging Face Hub",
                                fix=PULL_AGAIN) from None

    manifest = read_manifest(download(MANIFEST), repo_id)
    card = read_regular_file(download("README.md"), "a dataset card", CARD_LIMIT_BYTES).decode("utf-8", errors="replace")
    chosen = choose_entries(manifest, names, form, repo_id)
    lock = load_lock(lock_path)
    for entry in chosen:     # every refusal before the first byte of an image
        if not card_lists(card, entry):
            raise ImageError(f"{repo_id}: the dataset card does not list {entry.path_in_repo} with sha256 "
                             f"{entry.sha256[:12]}, which its {MANIFEST} names", fix="do not trust this release's "
                             "images; ask its authors to publish them again (kit publish --with-images)")
        if entry.image.artifacts.get(entry.form) is None or entry.image.artifacts[entry.form].sha256 != entry.sha256:
            raise ImageError(f"{repo_id}: {MANIFEST} gives {entry.path_in_repo} two sha256s",
                             fix="ask the release's authors to publish it again (kit publish --with-images)")
        if form != "tar":
            record_pulled(lock.model_copy(deep=True), entry, lock_path)
    pulled = []
    for entry in chosen:
        say(f"downloading {entry.path_in_repo} ({entry.bytes / 1e6:.1f} MB) from {repo_id} ...")
        got = download(entry.path_in_repo)
        sha = file_sha256(got)
        if sha != entry.sha256:
            got.unlink(missing_ok=True)
            raise ImageError(f"{repo_id}: {entry.path_in_repo} downloaded with sha256 {sha[:12]}, the card and "
                             f"manifest record {entry.sha256[:12]} (the download was removed)",
                             fix="pull again; if it stays different, do not use this file")
        final = Path(out_dir) / Path(entry.path_in_repo).name
        os.replace(got, final)
        recorded = None
        if form != "tar":
            update_lock(lock_path, lambda lk, e=entry: record_pulled(lk, e, lock_path))
            recorded = Path(lock_path)
        pulled.append(PulledImage(entry.backend, form, final, sha, final.stat().st_size, entry.image.image_id,
                                  recorded))
        say(f"{final}: sha256 {sha[:12]} as the card lists" + (f"; recorded in {lock_path}" if recorded else
                                                               f"; load it with: docker load -i {final}"))
    return pulled
