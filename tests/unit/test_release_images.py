"""A release that carries its images: `kit publish --with-images` uploads the image files the release's
results ran in (checked against the lock), their manifest and the card's images section; `kit images
pull` gets them back from the hub, checked against the card, the manifest and their own bytes, and
records them where `kit reproduce` finds them. The hub is tests/hubserver.py, the real HfApi and
hf_hub_download talk to it; the image files are random bytes (the integration tier reruns a result
from a real SIF)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest_checkpoints import rewrite, seal
from inprocess import kit_in_process
from release_helpers import demo_sweep

from kit.images.built import Artifact, BuiltImage, ImagesLock, load_lock, save_lock
from kit.results import keys
from kit.results.store import iter_checkpoint_files

IMAGE_ID = "sha256:" + "4" * 64
SIF, TAR = "kit-transformers-5.17-444444444444.sif", "kit-transformers-5.17-444444444444.tar"


def kit(*args: str, cwd: Path):
    return kit_in_process(*args, cwd=cwd)


@pytest.fixture
def shop(tmp_path, monkeypatch):
    """A release whose checkpoints ran in IMAGE_ID's SIF, the lock of that image (SIF and docker
    archive) and their files in build/images."""
    sweep = demo_sweep(tmp_path)
    backend = sweep.project.roster.run[0].backend
    images = tmp_path / "build" / "images"
    images.mkdir(parents=True)
    arts = {}
    for form, name in (("sif", SIF), ("tar", TAR)):
        data = os.urandom(50_000)
        (images / name).write_bytes(data)
        arts[form] = Artifact(file=name, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    built = BuiltImage(backend=backend, tag=f"kit/{backend}:test-cpu", image_id=IMAGE_ID, dockerfile_sha256="d" * 64,
                       lock_sha256="l" * 64, base="kit/base:bookworm", kit_version="0.1.0",
                       built_at="2026-12-01T00:00:00+00:00", variant="cpu", artifacts=arts)
    save_lock(ImagesLock(images={backend: built}), tmp_path / "images.lock.json")
    for path in iter_checkpoint_files(sweep.results):
        rewrite(path, lambda d: d[keys.PROVENANCE][keys.PROV_IMAGE].update(
            {keys.IMAGE_DIGEST: IMAGE_ID, keys.IMAGE_ARTIFACT: "sif", keys.IMAGE_ARTIFACT_SHA256: arts["sif"].sha256}))
        seal(path)
    assert kit("release", "results", "-o", "release", cwd=tmp_path).returncode == 0
    monkeypatch.setenv("KIT_IMAGES_LOCK", str(tmp_path / "images.lock.json"))
    monkeypatch.setenv("KIT_IMAGES_DIR", str(images))
    return tmp_path, backend, arts


def test_dry_run_lists_the_image_files_the_manifest_and_the_card(shop):
    root, backend, arts = shop
    r = kit("publish", "me/lrb", "release", "--with-images", "sif,tar", "--dry-run", "--json", cwd=root)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["images"] == {f"images/{SIF}": str(root / "build/images" / SIF),
                              f"images/{TAR}": str(root / "build/images" / TAR)}
    assert data["files"][f"images/{SIF}"] == 50_000 and "images/manifest.json" in data["files"]
    assert data["files"]["README.md"] > (root / "release" / "README.md").stat().st_size
    assert not (root / "release" / "images").exists()          # the release folder is not changed
    r = kit("publish", "me/lrb", "release", "--with-images", "sif", "--dry-run", cwd=root)
    assert f"  images/{SIF}  (50,000 bytes, from {root}/build/images/{SIF})" in r.stdout
    assert "  images/manifest.json  (" in r.stdout and "written by kit)" in r.stdout


def _refused(r, code: int, *words: str) -> None:
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    (line,) = [x for x in r.stderr.splitlines() if "error" in x]
    for w in words:
        assert w in line, (w, line)


def test_publish_refuses_images_it_cannot_vouch_for(shop):
    root, backend, arts = shop
    _refused(kit("publish", "me/lrb", "release", "--with-images", "docker", "--dry-run", cwd=root), 2,
             "'docker'", "sif, sqsh, tar")
    _refused(kit("publish", "me/lrb", "release", "--with-images", "sqsh", "--dry-run", cwd=root), 1,
             f"no sqsh of {backend}", f"kit images convert {backend} --to sqsh")
    (root / "build/images" / TAR).write_bytes(b"x" * 50_000)
    _refused(kit("publish", "me/lrb", "release", "--with-images", "tar", "--dry-run", cwd=root), 1,
             "has sha256", "the lock records")
    (root / "build/images" / TAR).unlink()
    _refused(kit("publish", "me/lrb", "release", "--with-images", "tar", "--dry-run", cwd=root), 1, "is not here")
    lock = load_lock(root / "images.lock.json")      # the lock's SIF is a later conversion, not the one run
    lock.images[backend].artifacts["sif"] = Artifact(file=SIF, sha256="9" * 64, bytes=50_000)
    save_lock(lock, root / "images.lock.json")
    _refused(kit("publish", "me/lrb", "release", "--with-images", "sif", "--dry-run", cwd=root), 1,
             "is not the one the release's results ran in")
    lock.images[backend].image_id = "sha256:" + "5" * 64
    save_lock(lock, root / "images.lock.json")
    _refused(kit("publish", "me/lrb", "release", "--with-images", "sif", "--dry-run", cwd=root), 1,
             f"ran in image {IMAGE_ID[:19]}", "records sha256:555555555555")


@pytest.fixture
def published(shop, monkeypatch):
    """The release published with its SIF and docker archive, then served back as the dataset repo."""
    from hubserver import HubServer, Repo, go_online

    root, backend, arts = shop
    go_online(monkeypatch)
    hub = HubServer({})
    endpoint = hub.start()
    try:
        r = kit("publish", "me/lrb", "release", "--with-images", "sif,tar", "--endpoint", endpoint, cwd=root)
        assert r.returncode == 0, r.stderr
        (commit,) = hub.commits
        served = root / "served"
        for rel, data in commit.files.items():
            (served / rel).parent.mkdir(parents=True, exist_ok=True)
            (served / rel).write_bytes(data)
        hub.repos["me/lrb"] = Repo("c" * 40, served)
        yield root, backend, arts, hub, endpoint, served
    finally:
        hub.stop()


def test_publish_uploads_the_files_the_manifest_and_a_card_listing_their_sha256(published):
    root, backend, arts, hub, endpoint, served = published
    assert (served / "images" / SIF).read_bytes() == (root / "build/images" / SIF).read_bytes()
    manifest = json.loads((served / "images/manifest.json").read_text())
    rows = {(e["backend"], e["form"]): e for e in manifest["images"]}
    assert set(rows) == {(backend, "sif"), (backend, "tar")}
    assert rows[(backend, "sif")]["sha256"] == arts["sif"].sha256
    assert rows[(backend, "sif")]["image"]["image_id"] == IMAGE_ID
    assert list(rows[(backend, "sif")]["image"]["artifacts"]) == ["sif"]
    card = (served / "README.md").read_text()
    assert card.startswith((root / "release" / "README.md").read_text().rstrip("\n"))
    assert f"| {backend} | sif | `images/{SIF}` | `{arts['sif'].sha256}` | 50,000 |" in card
    assert "kit images pull me/lrb --form sif" in card


def test_pull_checks_and_records_the_sif_where_reproduce_finds_it(published):
    from kit.repro.resolve import resolve_image

    root, backend, arts, hub, endpoint, served = published
    r = kit("images", "pull", "me/lrb", "--form", "sif", "--out", "pulled", "--lock-file", "pulled.lock.json",
            "--endpoint", endpoint, "--json", cwd=root)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["data"]["pulled"]
    assert (row["backend"], row["sha256"], row["image_id"]) == (backend, arts["sif"].sha256, IMAGE_ID)
    assert (root / "pulled" / SIF).read_bytes() == (root / "build/images" / SIF).read_bytes()
    lock = load_lock(root / "pulled.lock.json")
    assert lock.images[backend].image_id == IMAGE_ID and lock.images[backend].artifacts["sif"].sha256 == arts["sif"].sha256
    result = json.loads(iter_checkpoint_files(root / "release" / "checkpoints")[0].read_text())
    found = resolve_image(result, "apptainer", lock=lock, search=[root / "pulled"])
    assert found.ref == str(root / "pulled" / SIF) and found.matches_record
    r = kit("images", "pull", "me/lrb", backend, "--form", "tar", "--out", "pulled", "--lock-file", "pulled.lock.json",
            "--endpoint", endpoint, cwd=root)
    assert r.returncode == 0 and "docker load -i" in r.stderr, r.stderr


def test_pull_refuses_what_the_card_does_not_vouch_for_a_bad_download_and_another_build(published):
    root, backend, arts, hub, endpoint, served = published
    pull = ("images", "pull", "me/lrb", "--out", "pulled", "--lock-file", "pulled.lock.json", "--endpoint", endpoint)
    _refused(kit(*pull, "no-such-backend", cwd=root), 2, "carries no sif of no-such-backend",
             f"{backend} (sif), {backend} (tar)")
    _refused(kit(*pull, "--form", "sqsh", cwd=root), 2, "carries no sqsh file")
    hub.corrupt.add(f"images/{SIF}")
    _refused(kit(*pull, cwd=root), 1, "downloaded with sha256", "the download was removed")
    assert not (root / "pulled" / SIF).exists() and not (root / "pulled.lock.json").exists()
    hub.corrupt.clear()
    card = (served / "README.md").read_text()
    (served / "README.md").write_text(card.replace(arts["sif"].sha256, "0" * 64))
    gets = len(hub.gets(SIF))
    _refused(kit(*pull, cwd=root), 1, "does not list", "do not trust")
    assert len(hub.gets(SIF)) == gets                           # refused before a byte of the image
    (served / "README.md").write_text(card)
    other = ImagesLock(images={backend: load_lock(root / "images.lock.json").images[backend].model_copy(
        update={"image_id": "sha256:" + "6" * 64})})
    save_lock(other, root / "pulled.lock.json")
    _refused(kit(*pull, cwd=root), 1, "holds another build", "--lock-file pulled.lock.json")
    assert load_lock(root / "pulled.lock.json") == other


def test_a_manifest_that_names_a_path_outside_images_is_refused(published):
    root, backend, arts, hub, endpoint, served = published
    manifest = json.loads((served / "images/manifest.json").read_text())
    for entry in manifest["images"]:
        entry["path_in_repo"] = "images/../../outside.sif"
    (served / "images/manifest.json").write_text(json.dumps(manifest))
    _refused(kit("images", "pull", "me/lrb", "--out", "pulled", "--endpoint", endpoint, cwd=root), 2,
             "not a file of images/")
    assert not (root / "outside.sif").exists() and not (root / "pulled" / SIF).exists()
    (served / "images/manifest.json").write_text("{not json")
    _refused(kit("images", "pull", "me/lrb", "--out", "pulled", "--endpoint", endpoint, cwd=root), 2,
             "is not an images manifest")


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE", "nothing listening"])
def test_pull_from_a_hub_that_cannot_be_reached_is_one_line_and_an_envelope(tmp_path, monkeypatch, offline):
    """The real hf_hub_download, offline or pointed at a port nothing listens on: one line naming what was
    being pulled, where and what to do; under --json the error envelope; no traceback, nothing pulled."""
    from hubserver import unreachable_hub

    endpoint = unreachable_hub(monkeypatch, offline)
    r = kit("images", "pull", "me/lrb", "--form", "sif", "--out", "pulled", "--lock-file", "pulled.lock.json",
            "--endpoint", endpoint, "--json", cwd=tmp_path)
    assert r.returncode == (2 if offline else 1) and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    said = "me/lrb needs the Hub at" if offline else "images/manifest.json of me/lrb failed at"
    assert line.startswith(f"kit: error: pulling {said} {endpoint}"), line
    envelope = json.loads(r.stdout)
    assert envelope["status"] == "error" and envelope["errors"] == [line.removeprefix("kit: error: ")]
    assert not (tmp_path / "pulled.lock.json").exists() and (offline is False or not (tmp_path / "pulled").exists())
