"""`kit publish`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@click.argument("repo_id")
@click.argument("release", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="List exactly what would be uploaded; contact nothing.")
@click.option("--private", is_flag=True, help="Create the dataset repo private (when it does not exist yet).")
@click.option("--message", default=None, help="The commit message. Default: names the release and its file count.")
@click.option("--token-file", type=click.Path(path_type=Path), default=None, envvar="KIT_HF_TOKEN_FILE",
              help="A mode-600 file holding the Hub token. Default: huggingface_hub's own login (hf auth login).")
@click.option("--endpoint", default=None, envvar="HF_ENDPOINT", help="The Hub's URL (default: huggingface_hub's).")
@click.option("--with-images", "with_images", default=None, metavar="sif,sqsh,tar",
              help="Also upload, under images/, the image files the release's results ran in, in these forms "
                   "(SIF for Apptainer, sqsh for Enroot, tar: a docker archive), checked against the lock.")
@click.option("--images-dir", type=click.Path(path_type=Path), default="build/images", show_default=True,
              envvar="KIT_IMAGES_DIR", help="Folder of the SIF/sqsh/tar files (kit images convert/save). Env: KIT_IMAGES_DIR.")
@click.option("--lock-file", type=click.Path(path_type=Path), default="containers/images.lock.json", show_default=True,
              envvar="KIT_IMAGES_LOCK", help="Lock of the built images the results ran in. Env: KIT_IMAGES_LOCK.")
@common.json_option
def publish(repo_id: str, release: Path, dry_run: bool, private: bool, message: str | None, token_file: Path | None,
            endpoint: str | None, with_images: str | None, images_dir: Path, lock_file: Path, as_json: bool) -> None:
    """Upload a release folder (kit release) to a Hugging Face dataset repo, in one commit.

    Every file of RELEASE goes up except archives and leftovers: hidden files and
    folders (.superseded/, claim files, kit's .kit-output.json), *.tmp, *.part and
    *.lock. Anything that looks like a credential stops the publish before anything
    is sent: a name like .netrc, id_rsa or credentials, or a token or key (Hugging
    Face, AWS, GitHub, OpenAI, Slack, private keys, ...) in any file or folder name or
    anywhere in a file, inside zip, tar and gzip archives, base64, JSON-escaped,
    URL-encoded or UTF-16 (detect-secrets' detectors; pip install
    'kit-sweep[publish]'). The error names the file, never the value. The upload is
    huggingface_hub's HfApi: create_repo(repo_type="dataset", exist_ok=True), then one
    create_commit of exactly the listed files. --dry-run lists them and contacts nothing.

    --with-images sif,tar adds, in the same commit, each image file the release's
    checkpoints ran in (found in --images-dir, hashed against the lock; refused when the
    lock's file is not the one the results ran in), images/manifest.json, and a section of
    the dataset card listing every file's sha256: a reviewer then needs no Docker and no
    build (kit images pull REPO, then kit reproduce).

    kit's tests check it with a fake HfApi and with the real HfApi against a local
    stand-in hub (tests/hubserver.py, tests/unit/test_release.py); they never reach
    the real Hub.

    \b
    Examples:
      kit publish me/lrb-results release --dry-run
      kit publish me/lrb-results release --token-file ~/.config/kit/hf_token
      kit publish me/lrb-results release --dry-run --json
      kit publish me/lrb-results release --with-images sif,tar --dry-run
    """
    from kit.results.publish import check_repo_id, default_api, plan_publish
    from kit.results.publish import publish as upload

    check_repo_id(repo_id)
    plan = plan_publish(release)
    if with_images is not None:
        from kit.images.built import load_lock
        from kit.results.publish import add_images
        from kit.results.release_images import parse_forms, plan_image_uploads

        forms = parse_forms(with_images)
        add_images(plan, plan_image_uploads(release, forms, load_lock(lock_file), lock_file, images_dir, common.say),
                   repo_id)
    url = None
    if not dry_run:
        url = upload(repo_id, plan, default_api(token_file, endpoint), private=private, message=message)
    render(Outcome("publish", {"repo_id": repo_id, "dry_run": dry_run, "commit_url": url, **plan.as_dict()},
                   _lines(plan, release, repo_id, dry_run, url)), as_json)


def _lines(plan, release: Path, repo_id: str, dry_run: bool, url: str | None):
    """What was (or would be) uploaded, in all and file by file, then each file left out and why."""
    verb = "would upload" if dry_run else "uploaded"
    yield (f"{verb} {len(plan.files)} files ({sum(plan.files.values()):,} bytes) from {release} to dataset {repo_id}"
           + (f": {url}" if url else ""))
    for rel, n in plan.files.items():
        origin = (f", from {plan.images[rel]}" if rel in plan.images
                  else ", written by kit" if rel in plan.written else "")
        yield f"  {rel}  ({n:,} bytes{origin})"
    for rel, why in plan.skipped.items():
        yield f"  skipped {rel}: {why}"
