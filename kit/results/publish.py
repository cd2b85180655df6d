"""`kit publish`: a release folder (kit release) uploaded to a Hugging Face dataset repo in one commit.

What goes up is listed first, file by file: every file of the release except archives and leftovers
(anything hidden, such as .superseded/, .kit-output.json and claim files; *.tmp, *.part, *.lock).
Anything that looks like a credential stops the publish before anything is sent: a name (of any
file or folder in the release) or the whole content of a file to upload, archives unpacked and
encodings undone, as kit.results.secrets finds it with detect-secrets' detectors. The upload is one
`HfApi.create_commit` of exactly the listed files (each path as is, no pattern matching), after
`create_repo(..., repo_type="dataset", exist_ok=True)`. With images (kit.results.release_images), the
image files go up in the same commit under `images/`, with `images/manifest.json` and the card's
images section; image files are checked by sha256 against the lock, not scanned (they are the built
images, whose build never takes a credential in: kit images build's CA-bundle rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import ConfigError, KitError, service_error

SKIPPED_SUFFIXES = (".tmp", ".part", ".lock", ".claim", ".pyc")
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}\Z")


@dataclass
class PublishPlan:
    """The files to upload (path in the repo -> size) and those left out with why."""

    release: Path
    files: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    written: dict[str, bytes] = field(default_factory=dict)    # repo path -> bytes kit writes (not the release's)
    images: dict[str, Path] = field(default_factory=dict)      # repo path -> image file here

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"release": str(self.release), "files": self.files, "skipped": self.skipped,
                "images": {rel: str(path) for rel, path in self.images.items()},
                "bytes": sum(self.files.values())}


def add_images(plan: PublishPlan, uploads: list, repo_id: str) -> PublishPlan:
    """The plan with the release's image files (kit.results.release_images.ImageUpload), their
    manifest, and the card with its images section."""
    from kit.results.release_images import MANIFEST, card_with_images, manifest_bytes

    taken = [rel for rel in [MANIFEST, *(u.entry.path_in_repo for u in uploads)] if rel in plan.files]
    if taken:
        raise ConfigError(f"{plan.release}: {taken[0]} is a file of the release and would be replaced by an image "
                          "file or the images manifest", fix="remove the release's own images/ folder, or publish "
                          "without --with-images")
    for u in uploads:
        plan.images[u.entry.path_in_repo] = u.local
        plan.files[u.entry.path_in_repo] = u.entry.bytes
    plan.written[MANIFEST] = manifest_bytes(uploads)
    card = (plan.release / "README.md").read_text(encoding="utf-8")
    plan.written["README.md"] = card_with_images(card, uploads, repo_id).encode("utf-8")
    for rel, data in plan.written.items():
        plan.files[rel] = len(data)
    return plan


def check_repo_id(repo_id: str) -> str:
    """The repo id when it reads as owner/name; a ConfigError otherwise."""
    if not REPO_ID.match(repo_id) or ".." in repo_id:
        raise ConfigError(f"repo id {repo_id!r} is not owner/name", fix="pass the dataset repo as owner/name, e.g. me/lrb-results")
    return repo_id


def plan_publish(release: Path) -> PublishPlan:
    """What publishing RELEASE would upload; a ConfigError for a folder that is not a release or holds a secret."""
    release = Path(release)
    if not release.is_dir():
        raise ConfigError(f"release folder {str(release)!r} does not exist", fix="write it with `kit release RESULTS -o DIR`")
    if not (release / "README.md").is_file():
        raise ConfigError(f"{release}: no README.md (dataset card), so not a release folder",
                          fix="write it with `kit release RESULTS -o DIR`, then publish that folder")
    from kit.results.secrets import folder_names, refuse_secrets, scan_file, scan_name

    plan = PublishPlan(release)
    findings = []
    for rel in folder_names(release):
        path = release / rel
        findings.extend(scan_name(rel))
        if not path.is_file() or path.is_symlink():
            if path.is_symlink():
                plan.skipped[rel] = "a symbolic link"
            continue
        hidden = any(part.startswith(".") for part in Path(rel).parts)
        if hidden or path.name.endswith(SKIPPED_SUFFIXES):
            plan.skipped[rel] = "hidden (archive, claim or kit's own record)" if hidden else "a temporary or lock file"
            continue
        findings.extend(scan_file(path, rel))
        plan.files[rel] = path.stat().st_size
    refuse_secrets(findings, release)
    if not plan.files:
        raise ConfigError(f"{release}: nothing to publish", fix="write the release with `kit release RESULTS -o DIR`")
    return plan


def publish(repo_id: str, plan: PublishPlan, api: Any, *, private: bool = False,
            message: str | None = None) -> str:
    """Create the dataset repo if needed and upload exactly the planned files in one commit; the commit URL."""
    from huggingface_hub import CommitOperationAdd

    check_repo_id(repo_id)

    def source(rel: str) -> Any:
        if rel in plan.written:
            return plan.written[rel]
        return str(plan.images.get(rel) or plan.release / rel)

    operations = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=source(rel)) for rel in plan.files]
    try:
        api.create_repo(repo_id=repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.create_commit(repo_id=repo_id, repo_type="dataset", operations=operations,
                                 commit_message=message or f"Publish {plan.release.name} ({len(operations)} files) "
                                                           "with kit")
    except KitError:
        raise
    except Exception as exc:   # noqa: BLE001 - the Hub's client and its HTTP library raise many kinds: one line
        where = getattr(api, "endpoint", None) or "the Hugging Face Hub"
        raise service_error(exc, f"publishing {repo_id}", where, after="nothing was published by kit past this point",
                            fix="check the network, HF_ENDPOINT and HF_HUB_OFFLINE (it must be unset to publish), "
                                "and the token's write access; then publish again (the upload is one commit)") from None
    return str(getattr(info, "commit_url", None) or info)


def default_api(token_file: Path | None = None, endpoint: str | None = None) -> Any:
    """huggingface_hub's HfApi, with the token of a mode-600 file when given (else the client's own login)."""
    from huggingface_hub import HfApi

    token = None
    if token_file is not None:
        from kit.weights.token import read_token_file

        token = read_token_file(Path(token_file))
    return HfApi(endpoint=endpoint, token=token)
