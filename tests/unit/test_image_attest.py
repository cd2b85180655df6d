"""Image provenance (kit.images.attest) without Docker: statements written for a recorded build and an
artifact file, traced from the file to its lock; a changed file, another image, a statement signed by
an untrusted key and a missing statement each break the chain where they should, and `kit reproduce`'s
check (kit.repro.resolve.check_image_provenance) refuses or says so."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kit.errors import ImageError
from kit.images.attest import (artifact_attestation_path, artifact_statement, build_attestation_path,
                               build_statement, trace_artifact, trace_build, write_attestation)
from kit.images.built import Artifact, BuiltImage, ImagesLock
from kit.repro.resolve import ResolvedImage, check_image_provenance
from kit.signing import init_key, load_signing_key


def _record(image_id: str = "sha256:" + "1a" * 32) -> BuiltImage:
    return BuiltImage(backend="gguf", tag="kit/gguf:test", image_id=image_id, dockerfile_sha256="d" * 64,
                      lock_sha256="c" * 64, base="kit/base:bookworm", base_image_id="sha256:" + "b" * 64,
                      kit_version="0", built_at="2026-12-05T00:00:00+00:00", build_args={"TORCH_VARIANT": "cpu"})


@pytest.fixture
def chain(tmp_path: Path):
    """A signing key, the lock folder, a recorded image with its build statement and a SIF with its own."""
    key = load_signing_key(init_key(tmp_path / "keys"))
    lock = tmp_path / "containers" / "images.lock.json"
    record = _record()
    write_attestation(build_attestation_path(lock, "gguf"), build_statement(record, "Dockerfile.gguf", "gguf.lock",
                                                                            "2026-12-05T00:00:00Z"), key)
    sif = tmp_path / "images" / "kit-gguf-1a1a.sif"
    sif.parent.mkdir()
    sif.write_bytes(b"a SIF")
    art = Artifact(file=sif.name, sha256=hashlib.sha256(b"a SIF").hexdigest(), image_id=record.image_id, tool="t")
    record.artifacts["sif"] = art
    write_attestation(artifact_attestation_path(sif), artifact_statement(record, "sif", art, sif), key)
    return key, lock, record, sif


def test_a_sif_is_traced_to_its_lock(chain):
    key, lock, record, sif = chain
    trace = trace_artifact(sif, record, lock, [key.public])
    assert trace.broken == () and trace.missing is None
    assert len(trace.held) == 5 and "as the lock records" in trace.held[-1]


def test_a_changed_file_and_another_image_break_the_chain(chain):
    key, lock, record, sif = chain
    sif.write_bytes(b"another SIF")
    assert "changed since" in trace_artifact(sif, record, lock).broken[0]
    sif.write_bytes(b"a SIF")
    other = _record("sha256:" + "2b" * 32)
    broken = trace_artifact(sif, other, lock).broken
    assert "was made from image 1a1a1a" in broken[0] and "names image 1a1a1a" in broken[1]
    assert trace_build(record.model_copy(update={"lock_sha256": "e" * 64}), lock).broken == (
        f"the build statement does not name the lock file the lock records ({'e' * 16}...)",)


def test_an_untrusted_signer_and_a_missing_statement(chain, tmp_path):
    key, lock, record, sif = chain
    stranger = load_signing_key(init_key(tmp_path / "stranger"))
    assert "not signed by a trusted key" in trace_artifact(sif, record, lock, [stranger.public]).broken[0]
    artifact_attestation_path(sif).unlink()
    assert trace_artifact(sif, record, lock).missing == f"no statement beside {sif.name} ({sif.name}.intoto.jsonl)"


def test_reproduce_checks_the_image_before_trusting_it(chain, tmp_path):
    key, lock, record, sif = chain
    images = ImagesLock(images={"gguf": record})
    resolved = ResolvedImage("apptainer", str(sif), record.image_id, record.artifacts["sif"].sha256, True, "sif")
    said = check_image_provenance(resolved, images, lock, [key.public])
    assert said.endswith("signed by a trusted key") and "as the lock records" in said
    sif.write_bytes(b"tampered")
    with pytest.raises(ImageError, match="the image's provenance does not hold"):
        check_image_provenance(resolved, images, lock)
    assert check_image_provenance(resolved, images, lock, allow_other=True).startswith("DOES NOT HOLD")
    sif.write_bytes(b"a SIF")
    artifact_attestation_path(sif).unlink()
    assert "made before kit attested images" in check_image_provenance(resolved, images, lock)
    with pytest.raises(ImageError, match="cannot be checked"):
        check_image_provenance(resolved, images, lock, [key.public])

