"""Credentials in a release stop `kit publish` wherever they hide (issue 29, section 4): in a file or
folder name, behind an encoding (base64, JSON escapes, URL encoding, UTF-16), inside an archive, past
the first megabytes, glued to a word, and whoever issued them (Hugging Face, AWS, GitHub, OpenAI,
Slack, an SSH key). Before, only `hf_` and 30 letters in a file's first 8 MiB, after a non-letter,
stopped it. Ordinary release content (digests, revisions, UUIDs, prose, base64 of prose) still goes
up, an archive too large to scan is refused rather than sent unscanned, and no refusal prints the
credential it found."""

from __future__ import annotations

import base64
import bz2
import gzip
import io
import json
import lzma
import sys
import tarfile
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from inprocess import kit_in_process as kit  # noqa: E402
from test_hostile_inputs import refused  # noqa: E402

# made up, and built here so that no scanner of this repository mistakes them for real ones
HF = "hf_" + "Qm7Xp2Lk9Rt4Vb8Nc3Zd6Fg1Hj5Ws0"
AWS_ID = "AKIA" + "Q7XP2LK9RT4VB8NC"
GITHUB = "ghp_" + "Qm7Xp2Lk9Rt4Vb8Nc3Zd6Fg1Hj5Ws0Ya1Eo2"
OPENAI = "sk-proj-" + "Qm7Xp2Lk9Rt4Vb8Nc3Zd6" + "T3BlbkFJ" + "Fg1Hj5Ws0Ya1Eo2Iu3Ty4"
SLACK = "xoxb-" + "1234567890-1234567890123-" + "Qm7Xp2Lk9Rt4Vb8Nc3Zd6Fg1"
SSH_KEY = ("-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + base64.b64encode(bytes(range(96))).decode()
           + "\n-----END OPENSSH " + "PRIVATE KEY-----\n")
SECRETS = (HF, AWS_ID, GITHUB, OPENAI, SLACK, SSH_KEY)


@pytest.fixture
def release(tmp_path) -> Path:
    """A small release folder holding what a kit release holds and nothing secret."""
    rel = tmp_path / "release"
    (rel / "data").mkdir(parents=True)
    (rel / "README.md").write_text("# Results\n\nF1 per model and language; see data/train.csv.\n")
    provenance = {"image_digest": "sha256:" + "3f" * 32, "model_revision": "a1b2c3d4" * 5,
                  "run_id": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
                  "prompt_sha256": "0123456789abcdef" * 4,
                  "answer": "The text is not toxic: it asks for a password reset link politely.",
                  "encoded_prompt": base64.b64encode(b"Is the following text toxic? Answer yes or no.").decode()}
    (rel / "data" / "checkpoint.json").write_text(json.dumps(provenance, indent=1))
    (rel / "data" / "train.csv").write_text("model,language,f1\norg/tiny,en,0.50\norg/tiny,fr,0.25\n")
    return rel


def publish(release: Path):
    return kit("publish", "me/lrb", str(release), "--dry-run", "--json", cwd=release.parent)


def _gz(data: bytes) -> bytes:
    return gzip.compress(data)


def _zip(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return buf.getvalue()


def _tgz(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


CASES = {
    "in a file name": (f"data/{HF}.txt", b"nothing here"),
    "in a folder name": (f"runs/{HF}/notes.md", b"nothing here"),
    "base64": ("notes.md", b"config: " + base64.b64encode(f"token={HF}".encode())),
    "url-safe base64 in a word": ("notes.md", b"x" + base64.urlsafe_b64encode(HF.encode())),
    "JSON-escaped": ("data/extra.json", json.dumps({"t": "hf\\u005f" + HF[3:]}).encode()),
    "URL-encoded": ("links.md", f"https://example.org/?t={quote(HF, safe='')}".encode().replace(b"_", b"%5F")),
    "UTF-16": ("notes-utf16.txt", f"the token is {HF}\n".encode("utf-16")),
    "UTF-16 big-endian": ("notes-utf16be.txt", f"the token is {HF}\n".encode("utf-16-be")),
    "gzip": ("data/log.txt.gz", _gz(f"export HF_TOKEN={HF}\n".encode())),
    "zip member content": ("data/bundle.zip", _zip("inner/readme.txt", f"token {HF}".encode())),
    "zip member name": ("data/bundle.zip", _zip(f"inner/{HF}.txt", b"nothing")),
    "tar.gz member": ("data/bundle.tar.gz", _tgz("key.txt", SSH_KEY.encode())),
    "gzip inside zip": ("data/nested.zip", _zip("log.gz", _gz(HF.encode()))),
    "zip behind other bytes": ("data/setup.sh", b"#!/bin/sh\nexit 0\n" + _zip("inner.txt", f"token {HF}".encode())),
    "zip inside gzip": ("data/bundle.zip.gz", _gz(_zip("inner.txt", f"token {HF}".encode()))),
    "gzip three deep": ("data/log.gz.gz.gz", _gz(_gz(_gz(f"token {HF}".encode())))),
    "gzip, across the first 512 bytes": ("data/log2.txt.gz", _gz(b"x" * 500 + f" {HF}\n".encode())),
    "bzip2": ("data/log.txt.bz2", bz2.compress(f"export HF_TOKEN={HF}\n".encode())),
    "xz": ("data/log.txt.xz", lzma.compress(f"export HF_TOKEN={HF}\n".encode())),
    "after 8 MiB": ("data/big.csv", b"row,1\n" * (1_500_000) + HF.encode() + b"\n"),
    "after a letter": ("notes.md", f"Authorization: Bearer{HF}".encode()),
    "an SSH private key": ("data/deploy.txt", SSH_KEY.encode()),
    "AWS credentials": ("credentials", b"[default]\naws_region = eu-west-3\n"),
    "an AWS key in a table": ("data/keys.csv", f"name,key\nci,{AWS_ID}\n".encode()),
    "a GitHub token": ("notes.md", f"clone with {GITHUB}".encode()),
    "an OpenAI key": ("notes.md", f"OPENAI_API_KEY={OPENAI}".encode()),
    "a Slack token": ("notes.md", f"slack: {SLACK}".encode()),
    "a key file by its name": ("data/id_ed25519", b"nothing readable"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hidden_credential_stops_the_publish(release, case):
    name, data = CASES[case]
    path = release / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    r = publish(release)
    refused(r, "refusing to publish what looks like a credential", Path(name).parts[0])
    for secret in SECRETS:
        assert secret not in r.stderr + r.stdout, "a refusal must not print the credential it found"
    assert "fix:" in r.stderr


def test_ordinary_release_content_still_goes_up(release):
    (release / "data" / "report.md").write_text("# Report\n\n| model | F1 |\n|---|---|\n| org/tiny | 0.50 |\n"
                                                "Keys of the table: model, language. See the password-free guide.\n")
    r = publish(release)
    assert r.returncode == 0, r.stderr
    assert set(json.loads(r.stdout)["data"]["files"]) == {"README.md", "data/checkpoint.json", "data/train.csv",
                                                         "data/report.md"}


def test_an_archive_too_large_to_scan_is_refused_not_sent_unscanned(release, monkeypatch):
    from kit.results import secrets

    monkeypatch.setattr(secrets, "UNPACKED_LIMIT", 1 << 20)
    (release / "data" / "bomb.gz").write_bytes(_gz(b"\0" * (4 << 20)))
    refused(publish(release), "bomb.gz", "too much to scan")


def test_a_file_past_its_first_block_is_scanned_across_the_border(release, monkeypatch):
    from kit.results import secrets

    monkeypatch.setattr(secrets, "CHUNK", 1 << 16)
    monkeypatch.setattr(secrets, "OVERLAP", 1 << 10)
    (release / "data" / "long.txt").write_bytes(b"a" * ((1 << 16) - 10) + HF.encode() + b"\n")
    refused(publish(release), "long.txt", "Hugging Face Token")


def test_what_follows_a_tar_archives_end_is_scanned_too(release):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo("empty.txt")
        archive.addfile(info, io.BytesIO(b""))
    (release / "data" / "bundle.tar").write_bytes(buf.getvalue() + f"token {HF}\n".encode())
    r = publish(release)
    refused(r, "bundle.tar", "Hugging Face Token")
    assert HF not in r.stderr


def test_an_archive_that_cannot_be_unpacked_is_one_line(release):
    good = _zip("notes.txt", "".join(map(str, range(5000))).encode())   # a few KiB of deflated data
    (release / "data" / "broken.zip").write_bytes(good[:100] + b"\xff" * 200 + good[300:])
    refused(publish(release), "broken.zip", "cannot unpack")


def test_archives_too_deep_or_locked_to_scan_are_refused_not_sent(release):
    """Past ARCHIVE_DEPTH layers (gzip of gzip of ...), or an encrypted zip: refused, never sent unscanned."""
    deep = f"token {HF}".encode()
    for _ in range(6):
        deep = _gz(deep)
    (release / "data" / "deep.gz").write_bytes(deep)
    refused(publish(release), "deep.gz", "nested more than 4 deep")
    (release / "data" / "deep.gz").unlink()
    locked = bytearray(_zip("s.txt", b"what kit cannot read"))
    for header, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):   # each header's flags: bit 0, encrypted
        start = locked.index(header)
        locked[start + at] |= 0x1
    (release / "data" / "locked.zip").write_bytes(bytes(locked))
    refused(publish(release), "locked.zip", "cannot unpack", "encrypted")


def test_a_signed_statement_with_a_key_given_twice_is_scanned_as_its_bytes(release):
    """A duplicated key hides its first value from a JSON reader, not from the upload: such an envelope is
    not kit's form, so its raw bytes are scanned."""
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": [], "predicate": {}}
    path = _envelope(release, statement)
    assert publish(release).returncode == 0
    path.write_text('{"payload": "token=' + HF + '", ' + path.read_text()[1:])
    refused(publish(release), "org__tiny.intoto.jsonl")


def _envelope(release: Path, statement: dict, sig: bytes | None = None) -> Path:
    """A signed statement as kit sign writes it (a real Ed25519 signature unless `sig` is given)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner

    envelope = Envelope(json.dumps(statement).encode(), "application/vnd.in-toto+json", {})
    envelope.sign(CryptoSigner.generate_ed25519())
    body = envelope.to_dict()
    if sig is not None:
        body["signatures"][0]["sig"] = base64.b64encode(sig).decode()
    path = release / "checkpoints" / "en" / "org__tiny.intoto.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body) + "\n")
    return path


def test_a_signed_statement_goes_up_and_a_credential_inside_it_does_not(release):
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "en/org__tiny.json",
                 "digest": {"sha256": "3f" * 32}}], "predicate": {"signing": {"keyid": "ab" * 32}}}
    _envelope(release, statement)
    r = publish(release)
    assert r.returncode == 0, r.stdout + r.stderr   # the signature's entropy is no credential
    statement["predicate"]["note"] = f"token {HF}"
    _envelope(release, statement)
    refused(publish(release), "org__tiny.intoto.jsonl")
    # a credential in a signature's place, or a signature of another length, is scanned as any text
    del statement["predicate"]["note"]
    _envelope(release, statement, sig=HF.encode().ljust(64, b"0"))
    refused(publish(release), "org__tiny.intoto.jsonl")
    _envelope(release, statement, sig=bytes(range(200, 256)) * 2)
    refused(publish(release), "org__tiny.intoto.jsonl")
