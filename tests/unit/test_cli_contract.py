"""The CLI as a contract: every command (subcommands of `kit images` included) teaches with an
example in --help and offers --json; under --json, good input prints one envelope with a status of
the closed set, and bad input prints the error envelope on stdout, one `kit: error:` line on stderr
and exit 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from kit.cli.common import STATUSES
from kit.cli.main import COMMANDS, cli

REPO = Path(__file__).resolve().parents[2]
ENVELOPE = {"kit_result_version", "command", "status", "data", "errors"}


def _all_commands() -> dict[str, click.Command]:
    """'plan', 'images build', ...: every leaf command."""
    ctx = click.Context(cli)
    out = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                out[f"{name} {sub}"] = command.get_command(ctx, sub)
        else:
            out[name] = command
    return out


ALL = _all_commands()


def kit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def envelope(r: subprocess.CompletedProcess, command: str) -> dict:
    env = json.loads(r.stdout)   # stdout holds the envelope and nothing else
    assert set(env) == ENVELOPE and env["kit_result_version"] == 1, env
    assert env["command"] == command and env["status"] in STATUSES, env
    return env


def test_every_top_level_command_is_walked():
    assert {name.split()[0] for name in ALL} == set(COMMANDS)
    assert {"images build", "images convert", "images save", "images verify", "images lint", "images locks",
            "images defs", "weights stage", "weights push", "weights verify"} <= set(ALL)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_command_has_help_with_an_example_and_offers_json(name):
    command = ALL[name]
    with click.Context(command, info_name=name) as ctx:
        text = command.get_help(ctx)
    assert "Example" in text, f"kit {name} --help has no example"
    assert any("--json" in p.opts for p in command.params), f"kit {name} has no --json"


# argv that every command must refuse as bad input: missing files, unknown names, bad choices
BAD = {
    "demo": ["--runtime", "podman"],
    "plan": ["--roster", "missing.toml"],
    "pull": ["--site", "nancy", "--sites-file", "missing.toml"],
    "run": ["--site", "nancy", "--model", "org/m", "--sites-file", "missing.toml"],
    "shard": ["--roster", "missing.toml"],
    "status": ["results", "--roster", "missing.toml"],
    "verify": ["missing.json"],
    "report": ["missing-results"],
    "compare": ["org/a", "org/b", "--results", "missing-results"],
    "collect": ["--from", "no-equals-sign", "-o", "out"],
    "reproduce": ["missing.json"],
    "check": ["results", "--roster", "missing.toml"],
    "cancel": ["--site", "nancy", "--sites-file", "missing.toml"],
    "export": ["lrb", "missing-results", "-o", "out"],
    "release": ["missing-results", "-o", "out"],
    "publish": ["not-a-repo-id", "missing-release", "--dry-run"],
    "images build": ["no-such-image"],
    "images convert": ["no-such-image"],
    "images save": ["no-such-image"],
    "images verify": ["no-such-image"],
    "images lint": ["no-such-image"],
    "images locks": ["no-such-image"],
    "images defs": ["--images-file", "missing.toml"],
    "images push": ["--site", "nowhere", "gguf"],
    "images status": ["--site", "nowhere"],
    "images prune": ["--site", "nowhere"],
    "images pull": ["not a repo id"],
    "weights stage": ["--roster", "missing.toml"],
    "weights push": ["--site", "nancy", "--sites-file", "missing.toml"],
    "weights verify": ["--model", "org/m", "--roster", "missing.toml"],
    "keys init": ["--dir", "/dev/null"],
    "keys export": ["--ssh-key", "missing.pub"],
    "sign": ["missing-results"],
}


def test_every_command_has_a_bad_input_case():
    assert set(BAD) == set(ALL)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_gives_the_error_envelope_one_line_and_exit_2(name, tmp_path):
    (tmp_path / "results").mkdir()
    r = kit(*name.split(), *BAD[name], "--json", cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    env = envelope(r, name)
    assert env["status"] == "error" and env["data"] is None and len(env["errors"]) == 1, env
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if "rror" in line]
    assert len(errors) == 1, r.stderr


def test_good_input_gives_an_ok_envelope(tmp_path, lrb_dir):
    results = sorted((lrb_dir / "results").rglob("*.json"))
    r = kit("verify", *map(str, results), "--json", cwd=tmp_path)
    assert r.returncode == 0 and envelope(r, "verify")["status"] == "ok"
    r = kit("plan", "--benchmark", str(lrb_dir / "data"), "--languages", "en", "--json", cwd=tmp_path)
    assert r.returncode == 0 and envelope(r, "plan")["status"] == "ok"
    r = kit("images", "defs", "--check", "--images-file", str(REPO / "containers/images.toml"), "--json", cwd=tmp_path)
    assert r.returncode == 0 and envelope(r, "images defs")["data"]["stale"] == []


def test_a_finding_is_failed_not_error(tmp_path, lrb_dir):
    src = lrb_dir / "results/archive/historical-single-language/LiquidAI__LFM2.5-350M.json"
    data = json.loads(src.read_text())
    data["predictions"][0]["predicted"] = "no" if data["predictions"][0]["predicted"] == "yes" else "yes"
    bad = tmp_path / src.name
    bad.write_text(json.dumps(data))
    r = kit("verify", str(bad), "--json", cwd=tmp_path)
    env = envelope(r, "verify")
    assert r.returncode == 1 and env["status"] == "failed" and env["data"][0]["state"] == "invalid"


def test_release_and_publish_good_input_give_ok_envelopes(tmp_path):
    from release_helpers import demo_sweep

    demo_sweep(tmp_path)
    r = kit("release", "results", "-o", "release", "--json", cwd=tmp_path)
    assert r.returncode == 0 and envelope(r, "release")["status"] == "ok", r.stderr
    r = kit("publish", "me/lrb", "release", "--dry-run", "--json", cwd=tmp_path)
    assert r.returncode == 0 and envelope(r, "publish")["data"]["files"], r.stderr
