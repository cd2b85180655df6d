"""The CLI face: --help imports no heavy library; the plan envelope's data; verify on lrb files.
(Help examples, --json and the error envelope of every command: test_cli_contract.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "vllm", "llama_cpp", "docker", "mlperf_logging", "matplotlib", "numpy")


def test_help_imports_no_heavy_module():
    code = (
        "import sys, runpy\n"
        "from click.testing import CliRunner\n"
        "from kit.cli.main import cli, COMMANDS\n"
        "r = CliRunner()\n"
        "assert r.invoke(cli, ['--help']).exit_code == 0\n"
        "for c in COMMANDS: assert r.invoke(cli, [c, '--help']).exit_code == 0, c\n"
        f"bad = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"heavy modules imported by --help: {out}"


def test_unknown_command_exits_2():
    r = subprocess.run([sys.executable, "-m", "kit", "frobnicate"], capture_output=True, text=True)
    assert r.returncode == 2 and "No such command" in r.stderr


@pytest.mark.parametrize(("argv", "env", "said"), [
    (["frobnicate"], {}, ["No such command 'frobnicate'", "see `kit --help`"]),
    (["status", "--nope"], {}, ["No such option '--nope'", "see `kit status --help`"]),
    (["run", "--array", "abc", "--dry-run"], {}, ["Invalid value for '--array'", "'abc'", "see `kit run --help`"]),
    (["run", "--dry-run"], {"KIT_RUN_ARRAY": "abc"},
     ["Invalid value for '--array'", "(from the environment variable KIT_RUN_ARRAY)"]),
])
def test_a_command_line_click_refuses_is_one_kit_error_line(tmp_path, argv, env, said):
    """Usage errors read like every other refusal: one `kit: error:` line with its fix, exit 2, the
    environment variable named when the bad value came from one; --json gets the same line."""
    import os

    for extra in ([], ["--json"]):
        r = subprocess.run([sys.executable, "-m", "kit", *argv, *extra], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, **env})
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("kit: error: "), r.stderr
        assert "; fix: " in lines[0] and all(piece in lines[0] for piece in said), lines[0]
        if extra and argv[0] != "frobnicate":
            assert json.loads(r.stdout)["errors"] == [lines[0].removeprefix("kit: error: ")]


def test_json_envelope_contract(tmp_path, lrb_dir):
    r = subprocess.run([sys.executable, "-m", "kit", "plan", "--benchmark", str(lrb_dir / "data"),
                        "--languages", "en,fr,ja", "--json"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout)
    assert set(env) == {"kit_result_version", "command", "status", "data", "errors"}
    assert env["kit_result_version"] == 1 and env["command"] == "plan" and env["status"] == "ok"
    data = env["data"]
    assert data["prompts_per_language"] == {"en": 300, "fr": 300, "ja": 300}
    assert data["file_sha256"]["fr"] == "6de660af250b4d59ec0bdfa5cb081f27b5c7254808d2e40fa9f6cd7a523f1fab"
    assert data["whole_set"]["status"] == "not checked"


def test_verify_passes_on_every_shared_lrb_result(lrb_dir):
    files = sorted((lrb_dir / "results").rglob("*.json"))
    assert len(files) == 4
    r = subprocess.run([sys.executable, "-m", "kit", "verify", *map(str, files)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("OK ") == 4 and "without metadata.language" in r.stdout


def test_verify_fails_on_an_altered_prediction(tmp_path, lrb_dir):
    src = lrb_dir / "results/archive/historical-single-language/LiquidAI__LFM2.5-350M.json"
    data = json.loads(src.read_text())
    data["predictions"][3]["predicted"] = "no" if data["predictions"][3]["predicted"] == "yes" else "yes"
    bad = tmp_path / "LiquidAI__LFM2.5-350M.json"
    bad.write_text(json.dumps(data))
    r = subprocess.run([sys.executable, "-m", "kit", "verify", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "FAIL" in r.stdout and "accuracy" in r.stdout
