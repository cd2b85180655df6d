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


@pytest.mark.parametrize(("argv", "env", "named"), [
    (["plan"], {"KIT_ROSTER": "missing-roster.toml"}, True),
    (["plan", "--roster", "other.toml"], {"KIT_ROSTER": "missing-roster.toml"}, False),   # the option wins
    (["plan", "--roster=other.toml"], {"KIT_ROSTER": "missing-roster.toml"}, False),
    (["plan"], {"KIT_PLAN_ROSTER": "missing-roster.toml"}, True),     # click's own name for it
    (["plan"], {"KIT_ROSTER": "missing-roster.toml", "KIT_TEST_ONLY": "missing-roster.toml"}, True),
])
def test_a_refusal_names_the_environment_variable_its_value_came_from(tmp_path, argv, env, named):
    """A config refusal of a value the user never typed (it came from KIT_<OPTION>) names the variable,
    on the one error line and in the --json envelope; a value given on the command line is not blamed on
    the variable it overrides."""
    import os

    for extra in ([], ["--json"]):
        r = subprocess.run([sys.executable, "-m", "kit", *argv, *extra], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, **env})
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and "; fix: " in lines[0], r.stderr
        assert ("(from the environment variable KIT_" in lines[0]) is named, lines[0]
        assert "KIT_TEST_ONLY" not in lines[0]   # a variable no command reads is never blamed
        if extra:
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


def test_every_setting_kit_reads_from_the_environment_can_be_named_in_an_error():
    """kit.settings.SETTING_VARIABLES lists each KIT_* variable kit's code reads itself (not through an option),
    so that an error naming its value names it too; a flag (a yes/no) has no value worth naming."""
    import re
    from pathlib import Path

    import kit
    from kit.settings import SETTING_VARIABLES

    read = set()
    for source in Path(kit.__file__).parent.rglob("*.py"):
        read.update(re.findall(r"""(?:environ\.get\(|environ\[|getenv\()["'](KIT_[A-Z0-9_]+)["']""", source.read_text()))
    assert read, "no variable found: the pattern no longer matches how kit reads them"
    assert read - {"KIT_NO_CACHE"} <= set(SETTING_VARIABLES), sorted(read - set(SETTING_VARIABLES))


@pytest.mark.parametrize("value,envelope", [("1", True), ("true", True), ("0", False), ("", False)])
def test_json_asked_through_the_environment_gets_its_envelope_on_an_error_too(tmp_path, value, envelope):
    """KIT_<COMMAND>_AS_JSON asks for the JSON envelope as --json does: an error then comes back in it, as
    success would, beside the one stderr line."""
    import os

    r = subprocess.run([sys.executable, "-m", "kit", "plan", "--roster", "missing.toml"], capture_output=True,
                       text=True, cwd=tmp_path, env={**os.environ, "KIT_PLAN_AS_JSON": value})
    assert r.returncode == 2 and r.stderr.startswith("kit: error: ")
    if envelope:
        assert json.loads(r.stdout)["errors"] == [r.stderr.strip().removeprefix("kit: error: ")]
    else:
        assert r.stdout == ""


@pytest.mark.parametrize("value", ["abc", "-5", "0"])
def test_a_number_setting_that_is_not_one_is_bad_input_naming_it(monkeypatch, value):
    from kit.errors import ConfigError
    from kit.settings import setting_int

    monkeypatch.setenv("KIT_DOCKER_TIMEOUT", value)
    with pytest.raises(ConfigError, match=f"KIT_DOCKER_TIMEOUT={value!r} is not a whole number of at least 1"):
        setting_int("KIT_DOCKER_TIMEOUT", 600)
    monkeypatch.setenv("KIT_DOCKER_TIMEOUT", " 30 ")
    assert setting_int("KIT_DOCKER_TIMEOUT", 600) == 30
    monkeypatch.delenv("KIT_DOCKER_TIMEOUT")
    assert setting_int("KIT_DOCKER_TIMEOUT", 600) == 600


@pytest.mark.parametrize("argv", [
    ["status", "--roster", "r" * 5000 + ".toml"],            # kit's own refusal (a ConfigError)
    ["run", "--array", "9" * 5000, "--dry-run"],              # click's refusal of the command line
])
def test_a_very_long_value_is_shown_by_its_two_ends_in_the_error_line(tmp_path, argv):
    """A 5,000-character value makes no 5,000-character error line: its two ends, and how much was left out."""
    r = subprocess.run([sys.executable, "-m", "kit", *argv], capture_output=True, text=True, cwd=tmp_path)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("kit: error: "), r.stderr
    assert len(lines[0]) < 1000 and "characters left out)" in lines[0] and "; fix: " in lines[0], lines[0]


def test_shortened_keeps_short_words_and_each_long_word_s_ends():
    from kit.errors import LONG_WORD, shortened

    assert shortened("a b " + "x" * LONG_WORD) == "a b " + "x" * LONG_WORD
    long = "h" * 300 + "m" * 500 + "t" * 100
    cut = shortened(f"file {long} is bad")
    assert cut.startswith("file " + "h" * 200 + "...(") and cut.endswith("t" * 80 + " is bad")
    assert f"({len(long) - 280} characters left out)" in cut


def test_a_value_is_blamed_on_a_variable_only_when_the_message_names_that_value_itself(monkeypatch):
    """A path under the folder a variable names (the demo's benchmark under KIT_CACHE_DIR) did not come from
    that variable; the folder itself, quoted, did."""
    from kit.cli.main import environment_sources

    monkeypatch.setenv("KIT_CACHE_DIR", "/tmp/kit-cache")
    assert environment_sources("/tmp/kit-cache/demo-v2/data/benchmark.toml: no language 'xx'", ["status"]) == []
    assert environment_sources("/tmp/kit-cache-old: not a folder", ["status"]) == []
    assert environment_sources("cache folder '/tmp/kit-cache' is not writable", ["status"]) == ["KIT_CACHE_DIR"]


def test_every_environment_variable_kit_help_names_is_one_an_option_reads():
    import re

    import click

    from kit.cli.main import cli

    def envvars(command: click.Command) -> set[str]:
        found = {p.envvar for p in command.params if isinstance(getattr(p, "envvar", None), str)}
        if isinstance(command, click.Group):   # commands load lazily: asked by name
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                found |= envvars(command.get_command(ctx, name))
        return found

    said = set(re.findall(r"\bKIT_[A-Z_]+\b", cli.help or ""))
    assert said and said <= envvars(cli), said - envvars(cli)
