"""Build provenance of the images: `kit images build` writes a SLSA provenance (v1) statement of the image
it built, `kit images convert` one of each SIF, sqsh or docker archive it made, each in a DSSE envelope
(kit.signing) signed with the maintainer's key when there is one (KIT_SIGNING_KEY_PATH, else kit's own
from `kit keys init`; with neither, written unsigned: it still traces, it does not authenticate).

The chain a reviewer follows: an artifact's statement names the file by sha256 and the image it was
made from (resolvedDependencies: the image id); the build's statement names that image id and what it
was built from (the lock file and Dockerfile by sha256, the base image, the build arguments, kit's
commit). `trace_artifact` and `trace_build` follow it and say, link by link, whether it holds;
`kit reproduce` does before it trusts an image.

Files: the build's beside the images lock (<lock folder>/attestations/<lock name>-<backend>.build.intoto.jsonl,
e.g. containers/attestations/images.lock-gguf.build.intoto.jsonl, replaced with each build, as the lock
keeps one image per backend); an artifact's beside the artifact
(<file>.intoto.jsonl).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import kit
from kit.errors import MissingExtraError
from kit.files import file_sha256, write_text_atomic
from kit.images.built import Artifact, BuiltImage
from kit.signing import STATEMENT_TYPE, SigningKey, envelope_line, open_envelope

SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "urn:kit-sweep:build:image:v1"
CONVERT_TYPE = "urn:kit-sweep:build:image-artifact:v1"
BUILDER = "urn:kit-sweep:builder:kit-images"
ATTESTATIONS_DIR = "attestations"
SUFFIX = ".intoto.jsonl"


def build_attestation_path(lock_path: Path, backend: str) -> Path:
    """Where the build statement of a backend's image is kept: beside the images lock, named after the
    lock too (two locks in one folder keep their own statements)."""
    lock_path = Path(lock_path)
    return lock_path.parent / ATTESTATIONS_DIR / f"{lock_path.name.removesuffix('.json')}-{backend}.build{SUFFIX}"


def artifact_attestation_path(artifact: Path) -> Path:
    """Where an artifact's statement is kept: <file>.intoto.jsonl beside it."""
    artifact = Path(artifact)
    return artifact.with_name(artifact.name + SUFFIX)


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hex(digest: str) -> str:
    return digest.split(":", 1)[-1]


def build_statement(record: BuiltImage, dockerfile: str, lock_file: str, started: str) -> dict[str, Any]:
    """The SLSA provenance statement of one built image (subject: the image id)."""
    dependencies = [
        {"name": lock_file, "digest": {"sha256": record.lock_sha256}},
        {"name": dockerfile, "digest": {"sha256": record.dockerfile_sha256}},
        *({"name": path, "digest": {"sha256": sha}} for path, sha in sorted(record.build_locks_sha256.items())),
        {"name": record.base, **({"digest": {"sha256": _hex(record.base_image_id)}} if record.base_image_id else {})},
    ]
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": record.tag, "digest": {"sha256": _hex(record.image_id)}}],
        "predicateType": SLSA_PROVENANCE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"backend": record.backend, "variant": record.variant,
                                       "buildArgs": dict(sorted(record.build_args.items())), "base": record.base,
                                       "offline": record.offline},
                "internalParameters": {"kitVersion": record.kit_version, "kitCommit": record.kit_commit,
                                       "caBundleInBuildStageOnly": record.ca_bundle},
                "resolvedDependencies": dependencies,
            },
            "runDetails": {"builder": {"id": BUILDER, "version": {"kit": kit.__version__}},
                           "metadata": {"invocationId": f"{record.backend}@{record.image_id}", "startedOn": started,
                                        "finishedOn": record.built_at}},
        },
    }


def artifact_statement(record: BuiltImage, form: str, artifact: Artifact, path: Path) -> dict[str, Any]:
    """The SLSA provenance statement of one artifact (subject: the file by sha256), made from the image."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": artifact.file, "digest": {"sha256": artifact.sha256}}],
        "predicateType": SLSA_PROVENANCE,
        "predicate": {
            "buildDefinition": {
                "buildType": CONVERT_TYPE,
                "externalParameters": {"backend": record.backend, "form": form},
                "internalParameters": {"tool": artifact.tool, "kitVersion": kit.__version__},
                "resolvedDependencies": [{"name": record.tag, "digest": {"sha256": _hex(artifact.image_id or "")}}],
            },
            "runDetails": {"builder": {"id": BUILDER, "version": {"kit": kit.__version__}},
                           "metadata": {"invocationId": f"{form}@{artifact.sha256}",
                                        "finishedOn": artifact.made_at or _now()}},
        },
    }


def signed_by(key: SigningKey | None) -> str:
    """How a statement kit's tools wrote is signed, in a few words."""
    if key is None:
        return "unsigned: no KIT_SIGNING_KEY_PATH and no key made by kit keys init"
    return f"signed with key {key.keyid[:16]}..."


def write_attestation(where: Path, statement: dict[str, Any], key: SigningKey | None) -> str:
    """Write a statement's envelope (signed with `key`, or unsigned) atomically at `where`; what to tell
    the user. Without securesystemslib no statement is written, and that is said: the image is built."""
    try:
        text = envelope_line(statement, key)
    except MissingExtraError as exc:
        return f"no provenance statement: {exc.one_line()}"
    write_text_atomic(where, text)
    return f"provenance {where} ({signed_by(key)})"


@dataclass(frozen=True)
class Trace:
    """What holds along an image's provenance chain, what does not, and whether a statement is missing
    altogether (an image made before kit attested images, or elsewhere)."""

    held: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()
    missing: str | None = None


def trace_build(record: BuiltImage, lock_path: Path, trusted: Sequence[Any] | None = None) -> Trace:
    """The build statement of the recorded image: it names this image id and the lock file and
    Dockerfile the lock records. With `trusted`, it must be signed by one of those keys."""
    where = build_attestation_path(lock_path, record.backend)
    if not where.is_file():
        return Trace(missing=f"no build statement of {record.backend} ({where})")
    build, why = open_envelope(where, trusted)
    if build is None:
        return Trace(broken=tuple(f"build of {record.backend}: {w}" for w in why))
    if _subject_sha(build) != _hex(record.image_id):
        return Trace(broken=(f"the build statement of {record.backend} names image {str(_subject_sha(build))[:16]}..., "
                             f"not the recorded {_hex(record.image_id)[:16]}...",))
    held, broken = [f"image {record.image_id[:19]} is the one its build statement names"], []
    try:
        deps = {(d.get("digest") or {}).get("sha256") for d in build["predicate"]["buildDefinition"]["resolvedDependencies"]
                if isinstance(d, Mapping)}
    except (KeyError, TypeError):
        deps = set()
    for what, sha in (("the lock file", record.lock_sha256), ("the Dockerfile", record.dockerfile_sha256)):
        if sha in deps:
            held.append(f"built from {what} sha256 {sha[:16]}..., as the lock records")
        else:
            broken.append(f"the build statement does not name {what} the lock records ({sha[:16]}...)")
    return Trace(tuple(held), tuple(broken))


def trace_artifact(artifact: Path, record: BuiltImage, lock_path: Path,
                   trusted: Sequence[Any] | None = None) -> Trace:
    """The chain from an artifact file to the lock its image was built from: the artifact's statement
    names this file's sha256 and the recorded image, then trace_build. With `trusted`, each statement
    must be signed by one of those keys."""
    artifact = Path(artifact)
    where = artifact_attestation_path(artifact)
    if not where.is_file():
        return Trace(missing=f"no statement beside {artifact.name} ({where.name})")
    statement, why = open_envelope(where, trusted)
    if statement is None:
        return Trace(broken=tuple(f"artifact {artifact.name}: {w}" for w in why))
    held, broken = [], []
    sha = file_sha256(artifact)
    if _subject_sha(statement) != sha:
        broken.append(f"{where.name}: its subject is not {artifact.name}'s sha256 {sha[:16]}... (another file, "
                      "or changed since)")
    else:
        held.append(f"{artifact.name} sha256 {sha[:16]}... is the file its statement names")
    made_from = _dependency_sha(statement)
    if made_from != _hex(record.image_id):
        broken.append(f"{artifact.name} was made from image {str(made_from)[:16]}..., not the recorded "
                      f"{_hex(record.image_id)[:16]}...")
    else:
        held.append(f"made from image {record.image_id[:19]}, the one the lock records for {record.backend}")
    build = trace_build(record, lock_path, trusted)
    return Trace((*held, *build.held), (*broken, *build.broken), build.missing)


def _subject_sha(statement: Mapping[str, Any]) -> str | None:
    subjects = statement.get("subject") or []
    first = subjects[0] if subjects and isinstance(subjects[0], Mapping) else {}
    digest = first.get("digest")
    return digest.get("sha256") if isinstance(digest, Mapping) else None


def _dependency_sha(statement: Mapping[str, Any]) -> str | None:
    try:
        dependency = statement["predicate"]["buildDefinition"]["resolvedDependencies"][0]
        return dependency["digest"]["sha256"]
    except (KeyError, IndexError, TypeError):
        return None
