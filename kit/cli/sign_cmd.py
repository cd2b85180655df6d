"""`kit sign`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import visible


@click.command()
@click.argument("results", type=click.Path(path_type=Path, file_okay=False), default="results")
@click.option("--key", "key_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="An Ed25519 private key file, PEM or OpenSSH (mode 600). Default: kit's own (kit keys init).")
@click.option("--ssh-key", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Sign with an unencrypted OpenSSH Ed25519 private key (mode 600), e.g. ~/.ssh/id_ed25519.")
@click.option("--force", is_flag=True, help="Sign again the checkpoints that already have an envelope.")
@common.json_option
def sign(results: Path, key_file: Path | None, ssh_key: Path | None, force: bool, as_json: bool) -> None:
    """Sign each complete checkpoint of a results tree after the fact: an in-toto statement of
    the checkpoint and its log (by sha256) and its provenance, in a DSSE envelope beside it
    (<run>.intoto.jsonl). The statement says it was signed after the fact, and by which key.

    A signature proves who published a result and that it has not changed since; not that
    the computation was honest (kit reproduce is that evidence). Checkpoints that are not
    complete, or whose log is missing, are not signed (listed; exit 1). Check with
    kit verify --trusted-keys or kit check --trusted-keys.

    \b
    Examples:
      kit keys init && kit sign results
      kit sign results --ssh-key ~/.ssh/id_ed25519
    """
    from kit.results.sign import sign_tree
    from kit.signing import load_signing_key

    key = load_signing_key(key_file, ssh_key)
    done = sign_tree(common.results_folder(results), key, force=force)
    data = {"keyid": key.keyid, "signed": [str(p) for p in done.signed], "already_signed": [str(p) for p in done.already],
            "refused": {str(p): r for p, r in done.refused.items()}, "not_counted": done.not_counted,
            "kept_aside": {str(p): str(q) for p, q in done.kept_aside.items()}}
    lines = [visible(f"NOT SIGNED  {p}: {'; '.join(r)}") for p, r in done.refused.items()]
    lines += [visible(f"kept aside  {q}: it stood at the envelope's name of {p} and was no envelope")
              for p, q in done.kept_aside.items()]
    lines.append(f"{len(done.signed)} signed with key {key.keyid[:16]}..., {len(done.already)} already signed "
                 f"(--force signs again), {len(done.refused)} not signed")
    if done.not_counted:
        lines.append(f"not signed: {done.not_counted}")
    render(Outcome("sign", data, lines, failed=bool(done.refused)), as_json)
