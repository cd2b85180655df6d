"""Signing and checking signatures, all offline and in the user's hands: the keys (kit's own Ed25519
key pair, `kit keys init`: the private key as unencrypted PKCS#8 PEM, mode 600, in the user's config
folder; or an existing OpenSSH Ed25519 key, which Grid'5000 and Slurm users have on every frontend)
and DSSE envelopes of in-toto statements signed with them. Keys and envelopes are read and made
through securesystemslib (its CryptoSigner, SSlibKey and dsse.Envelope, on `cryptography`), imported
when used; a public key travels as securesystemslib's key dictionary with its keyid, the form
`kit keys export` prints and a trusted-keys file holds. What is signed (a result, an image build, an
image conversion) is its caller's: kit.results.attest, kit.images.attest.

A private key file that the group or others can read is refused, never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit import safejson
from kit.errors import ConfigError, MissingExtraError
from kit.files import TEMPORARY_SUFFIX, leftover_prefix, owner_only_file, read_regular_file, write_text_atomic

KEY_FILE = "ed25519.pem"
# the variable naming the key a job or kit's image tools sign with (a site passes it with forward_env)
KEY_PATH_ENV = "KIT_SIGNING_KEY_PATH"
_OPENSSH_HEADER = b"-----BEGIN OPENSSH PRIVATE KEY-----"
PUBLIC_FILE = "ed25519.pub.json"


def _sslib() -> Any:
    try:
        import securesystemslib.signer as signer
    except ImportError as exc:
        raise MissingExtraError("signing and checking signatures", "securesystemslib", "sign") from exc
    return signer


def key_folder() -> Path:
    """Where `kit keys init` keeps the key pair: $KIT_KEYS_DIR, else the user's config folder/kit/keys."""
    base = os.environ.get("KIT_KEYS_DIR")
    if base:
        return Path(base)
    from platformdirs import user_config_dir

    return Path(user_config_dir("kit")) / "keys"


@dataclass(frozen=True)
class SigningKey:
    """A private key ready to sign (securesystemslib's signer), its public key and where it came from."""

    signer: Any
    public: Any      # securesystemslib SSlibKey
    source: str      # "kit key <path>" or "ssh key <path>"

    @property
    def keyid(self) -> str:
        """The public key's keyid (securesystemslib's: sha256 of its canonical dictionary)."""
        return self.public.keyid


def init_key(folder: Path | None = None, *, force: bool = False) -> Path:
    """Make a new Ed25519 key pair in `folder` (key_folder()): the private key mode 600, the public key
    beside it; refused when one is there (unless `force`). The private key's path."""
    _sslib()   # securesystemslib and cryptography, or a MissingExtraError naming the extra
    import hashlib

    from filelock import FileLock

    folder = Path(folder or key_folder())
    # one init of a folder at a time on this host: two at once would leave one's private key beside the
    # other's public file (the lock lies in the temporary folder: the key folder holds the pair alone)
    name = hashlib.sha256(str(folder.resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    with FileLock(str(Path(tempfile.gettempdir()) / f"kit-keys-{name}.lock"), timeout=600):
        return _init_key(folder, force)


def _init_key(folder: Path, force: bool) -> Path:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder, so no key can be kept in it", fix="pass a folder with --dir")
    private = folder / KEY_FILE
    if private.exists() and not force:
        raise ConfigError(f"{private}: a signing key is already there",
                          fix="keep it (kit keys export prints its public key), or pass --force to replace it")
    for target in (private, folder / PUBLIC_FILE):   # checked before either is written: never half a pair
        if os.path.lexists(target) and (target.is_symlink() or not target.is_file()):
            raise ConfigError(f"{target}: something other than a key file stands there (a folder, link or pipe)",
                              fix="move it away, or keep the key pair in another folder (--dir)")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    # a temporary file of this process's own (two `keys init --force` at once must not remove each
    # other's), mode 600 from its creation (mkstemp), renamed into place
    fd, tmp = tempfile.mkstemp(prefix=leftover_prefix(private), suffix=TEMPORARY_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, private)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    write_public_file(folder, _sslib().SSlibKey.from_crypto(key.public_key()))
    return private


def write_public_file(folder: Path, public: Any) -> None:
    """Write the public key file beside a private key, in one step: the old file or the new one, never a
    part (`kit keys export` prints the public key of the private key itself, whatever this file holds)."""
    write_text_atomic(Path(folder) / PUBLIC_FILE, json.dumps(public_dict(public), indent=2) + "\n")


def load_signing_key(key: Path | None = None, ssh_key: Path | None = None) -> SigningKey:
    """The key to sign with: an OpenSSH Ed25519 private key (`ssh_key`), a PEM key file (`key`), or kit's
    own (key_folder()); either file may hold either form (its header says which). A ConfigError naming the
    file for a missing, loose, encrypted or non-Ed25519 key."""
    _sslib()   # securesystemslib and cryptography, or a MissingExtraError naming the extra
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if key is not None and ssh_key is not None:
        raise ConfigError("--key and --ssh-key both given", fix="sign with one key: pass one of them")
    path = Path(ssh_key or key or key_folder() / KEY_FILE).expanduser()
    body = _private_bytes(path, init_hint=key is None and ssh_key is None)
    ssh = body.lstrip().startswith(_OPENSSH_HEADER)   # the file says which it is, whichever option named it
    try:
        if ssh:
            private = serialization.load_ssh_private_key(body, password=None)
        else:
            private = serialization.load_pem_private_key(body, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        if isinstance(exc, TypeError) or "encrypt" in str(exc).lower() or "password" in str(exc).lower():
            raise ConfigError(f"{path}: the key is encrypted with a passphrase, which kit does not ask for",
                              fix="sign with an unencrypted key kept mode 600 (kit keys init makes one)") from None
        raise ConfigError(f"{path}: not a private key kit can read ({' '.join(str(exc).split())[:120]})",
                          fix="pass an OpenSSH Ed25519 key with --ssh-key, or make kit's own with kit keys init") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ConfigError(f"{path}: a {type(private).__name__.removeprefix('_')} key, not an Ed25519 one",
                          fix="sign with an Ed25519 key (ssh-keygen -t ed25519, or kit keys init)")
    signer = _sslib().CryptoSigner(private)
    return SigningKey(signer, signer.public_key, f"{'ssh' if ssh else 'kit'} key {path}")


def _private_bytes(path: Path, *, init_hint: bool) -> bytes:
    """A private key file's bytes; a ConfigError when it is missing or the group or others can read it."""
    if not path.exists():
        raise ConfigError(f"{path}: no signing key there",
                          fix="make one with kit keys init" if init_hint else "pass the path of your private key")
    owner_only_file(path, "private key")
    return path.read_bytes()


def public_dict(public: Any) -> dict[str, Any]:
    """A public key as a release carries it: securesystemslib's key dictionary with its keyid."""
    return {"keyid": public.keyid, **public.to_dict()}


def public_of_ssh(path: Path) -> dict[str, Any]:
    """The public key dictionary of an OpenSSH Ed25519 public key file (id_ed25519.pub)."""
    _sslib()   # securesystemslib and cryptography, or a MissingExtraError naming the extra
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from cryptography.exceptions import UnsupportedAlgorithm

    fix = "pass the *.pub file beside it, such as ~/.ssh/id_ed25519.pub"
    try:
        body = read_regular_file(path, "public key file", KEY_FILE_LIMIT, fix=fix)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})", fix=fix) from None
    if b"PRIVATE KEY" in body[:200]:
        raise ConfigError(f"{path}: a private key, not an OpenSSH public key", fix=fix)
    try:
        public = serialization.load_ssh_public_key(body)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ConfigError(f"{path}: not an OpenSSH public key ({' '.join(str(exc).split())[:120]})", fix=fix) from None
    if not isinstance(public, Ed25519PublicKey):
        raise ConfigError(f"{path}: not an Ed25519 public key", fix="use an Ed25519 key (ssh-keygen -t ed25519)")
    return public_dict(_sslib().SSlibKey.from_crypto(public))


def load_trusted_keys(path: Path) -> list[Any]:
    """The public keys a trusted-keys file names (one key dictionary, or a JSON list of them, as
    `kit keys export` prints them), as securesystemslib keys; a ConfigError naming the file and entry."""
    try:
        data = safejson.loads_utf8(read_regular_file(path, "trusted keys file", KEY_FILE_LIMIT,
                                                     fix="pass the JSON file kit keys export wrote"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: not a JSON file of public keys ({exc})",
                          fix="collect the output of kit keys export, one key or a JSON list of them") from None
    entries = data if isinstance(data, list) else [data]
    signer = _sslib()
    keys: list[Any] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("keyid"), str):
            raise ConfigError(f"{path}: entry {i} is not a public key with its keyid",
                              fix="use the JSON kit keys export prints")
        try:
            key = _ed25519_key(signer, entry)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{path}: entry {i} is not an Ed25519 public key ({exc})",
                              fix="use the JSON kit keys export prints") from None
        if key.keyid != entry["keyid"]:
            raise ConfigError(f"{path}: entry {i}'s keyid {entry['keyid'][:16]}... is not the key's own "
                              f"({key.keyid[:16]}...)", fix="export the key again with kit keys export")
        keys.append(key)
    if not keys:
        raise ConfigError(f"{path}: no key in it", fix="add the output of kit keys export")
    return keys


def _ed25519_key(signer: Any, entry: dict[str, Any]) -> Any:
    """An Ed25519 key dictionary as securesystemslib's key, its keyid computed from the key itself."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if entry.get("keytype") != "ed25519" or entry.get("scheme") != "ed25519":
        raise ValueError(f"keytype {entry.get('keytype')!r}, scheme {entry.get('scheme')!r}; kit signs with ed25519")
    raw = bytes.fromhex(entry["keyval"]["public"])
    return signer.SSlibKey.from_crypto(Ed25519PublicKey.from_public_bytes(raw))


KEY_FILE_LIMIT = 1 << 20   # a public key file or a list of them: a few KB
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
MAX_ENVELOPE_BYTES = 16 << 20


def envelope_of(statement: dict[str, Any], key: SigningKey | None) -> dict[str, Any]:
    """A DSSE envelope of an in-toto statement, signed with `key` (None: no signature, a statement
    that traces but does not authenticate), as the dictionary its file holds."""
    try:
        from securesystemslib.dsse import Envelope
    except ImportError as exc:
        raise MissingExtraError("signing and checking signatures", "securesystemslib", "sign") from exc
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    envelope = Envelope(payload, PAYLOAD_TYPE, {})
    if key is not None:
        envelope.sign(key.signer)
    return envelope.to_dict()


def envelope_line(statement: dict[str, Any], key: SigningKey | None) -> str:
    """The text of an envelope file (<name>.intoto.jsonl: one envelope, one line)."""
    return json.dumps(envelope_of(statement, key), sort_keys=True, separators=(",", ":")) + "\n"


def open_envelope(where: Path, trusted: Sequence[Any] | None) -> tuple[dict[str, Any] | None, list[str]]:
    """The in-toto statement of the envelope file `where`, once one of the `trusted` keys' signatures over
    it verifies (`trusted` None: read without checking any signature); else None and why, each reason
    naming the file."""
    try:
        from securesystemslib.dsse import Envelope
        from securesystemslib.exceptions import VerificationError
    except ImportError as exc:
        raise MissingExtraError("signing and checking signatures", "securesystemslib", "sign") from exc
    if not where.is_file():
        return None, [f"unsigned: no {where.name}"]
    try:
        if where.stat().st_size > MAX_ENVELOPE_BYTES:
            return None, [f"{where.name}: larger than {MAX_ENVELOPE_BYTES >> 20} MiB, not an envelope kit wrote"]
        envelope = Envelope.from_dict(safejson.loads_utf8(read_regular_file(where, "envelope", MAX_ENVELOPE_BYTES)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ConfigError) as exc:
        return None, [f"{where.name}: not a DSSE envelope ({' '.join(str(exc).split())[:100]})"]
    if envelope.payload_type != PAYLOAD_TYPE:
        return None, [f"{where.name}: payloadType {envelope.payload_type!r} is not {PAYLOAD_TYPE!r}"]
    if trusted is not None:
        try:
            envelope.verify(list(trusted), 1)
        except VerificationError:
            signers = sorted({s.keyid[:16] for s in envelope.signatures.values()}) or ["none"]
            return None, [f"{where.name}: not signed by a trusted key (its signatures: {', '.join(signers)}; "
                          "an untrusted key, or a payload changed after signing)"]
    try:
        statement = safejson.loads_utf8(envelope.payload)
    except ValueError:   # (UnicodeDecodeError too)
        return None, [f"{where.name}: its payload is not JSON"]
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        return None, [f"{where.name}: its payload is not an in-toto Statement v1 (_type)"]
    return statement, []


def envelope_signers(where: Path) -> set[str] | None:
    """The keyids whose signatures the envelope file `where` carries (none checked); None when it is not a
    DSSE envelope of kit's payload type (a file of someone else's standing at its name)."""
    try:
        from securesystemslib.dsse import Envelope
    except ImportError as exc:
        raise MissingExtraError("signing and checking signatures", "securesystemslib", "sign") from exc
    try:
        envelope = Envelope.from_dict(safejson.loads_utf8(read_regular_file(where, "envelope", MAX_ENVELOPE_BYTES)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ConfigError):
        return None
    if envelope.payload_type != PAYLOAD_TYPE:
        return None
    return {signature.keyid for signature in envelope.signatures.values()}


def signing_key_for_tools() -> SigningKey | None:
    """The key kit's own tools sign their statements with (image builds and conversions): the one
    KIT_SIGNING_KEY_PATH names, else kit's own when `kit keys init` made one; None when there is none
    (the statement is then written unsigned). A key that is there but unusable is a ConfigError."""
    named = os.environ.get(KEY_PATH_ENV, "").strip()
    if named:
        return load_signing_key(Path(named))
    own = key_folder() / KEY_FILE
    return load_signing_key(own) if own.exists() else None
