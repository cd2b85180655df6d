"""`kit keys`: the signing key pair results are signed with."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import ConfigError


@click.group()
def keys() -> None:
    """Make and export the Ed25519 key results are signed with (kit sign, kit verify --trusted-keys).

    The private key stays on this machine, mode 600, in the user's config folder
    (KIT_KEYS_DIR overrides it); it is never printed. An existing OpenSSH Ed25519 key
    (~/.ssh/id_ed25519) can sign instead: kit sign --ssh-key.
    """


dir_option = click.option("--dir", "folder", type=click.Path(path_type=Path), default=None,
                          help="The key folder. Default: KIT_KEYS_DIR, else the user's config folder (kit/keys).")


@keys.command("init")
@click.option("--force", is_flag=True, help="Replace the key pair that is there (results it signed then need the old public key).")
@dir_option
@common.json_option
def init(force: bool, folder: Path | None, as_json: bool) -> None:
    """Make a new Ed25519 key pair for signing results.

    \b
    Example:
      kit keys init && kit keys export > my-key.pub.json
    """
    from kit.signing import PUBLIC_FILE, init_key, load_signing_key

    import shlex

    private = init_key(folder, force=force)
    key = load_signing_key(private)
    # the folder given names this key everywhere after: without it, export (and sign) take the default's
    where = f" --dir {shlex.quote(str(folder))}" if folder is not None else ""
    render(Outcome("keys init", {"private_key": str(private), "public_key": str(private.parent / PUBLIC_FILE),
                                 "keyid": key.keyid},
                   (f"signing key made: {private} (mode 600, never printed)",
                    f"keyid {key.keyid}",
                    f"share the public key: kit keys export{where} > my-key.pub.json"
                    + (f"; sign with it: kit sign RESULTS --key {shlex.quote(str(private))}" if where else ""))),
           as_json)


@keys.command("export")
@click.option("--ssh-key", "ssh_public", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Print this OpenSSH Ed25519 public key (id_ed25519.pub) in kit's form instead of kit's own key.")
@dir_option
@common.json_option
def export(ssh_public: Path | None, folder: Path | None, as_json: bool) -> None:
    """Print the public key (JSON: keyid, keytype, scheme, keyval), the form a release and a
    --trusted-keys file carry (one key, or a JSON list of them).

    \b
    Examples:
      kit keys export > my-key.pub.json
      kit keys export --ssh-key ~/.ssh/id_ed25519.pub
    """
    from kit.signing import KEY_FILE, key_folder, load_signing_key, public_dict, public_of_ssh

    if ssh_public:
        data = public_of_ssh(ssh_public)
    else:
        private = Path(folder or key_folder()) / KEY_FILE
        if not private.exists():
            raise ConfigError(f"{private}: no signing key there",
                              fix="make one with kit keys init" + (f" --dir {folder}" if folder else "")
                                  + f", or point --dir at the folder that holds {KEY_FILE}")
        data = public_dict(load_signing_key(private).public)
    render(Outcome("keys export", data, (json.dumps(data, indent=2),)), as_json)
