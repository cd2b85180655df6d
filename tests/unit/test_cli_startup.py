"""Start-up: `kit --help` lists every command with its short help, and no command's --help imports
pydantic, rich or kit's config models (they load when a command runs; issue 15)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kit.cli.main import COMMANDS

LATE = ("pydantic", "rich", "kit.config.project", "kit.config.roster", "kit.launch", "kit.results.checkpoint")


def test_top_level_help_lists_every_command_with_its_short_help():
    out = subprocess.run([sys.executable, "-m", "kit", "--help"], capture_output=True, text=True, check=True).stdout
    for name, (_, short) in COMMANDS.items():
        assert any(line.split()[:1] == [name] and short.split()[0] in line for line in out.splitlines()), name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_of_a_command_loads_no_config_model_or_table_library(name):
    code = ("import sys\nfrom kit.cli.main import main\n"
            f"try:\n    main([{name!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            f"print(','.join(m for m in {LATE!r} if m in sys.modules), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1:] in ([], [""]), f"kit {name} --help imported: {done.stderr}"


@pytest.mark.parametrize("argv, frozen", [(None, True), (["--version"], False)])
def test_kit_as_the_program_leaves_the_exit_no_collection_to_make_and_a_caller_keeps_its_collector(argv, frozen):
    """Run from the command line (argv None), kit hands what it held to the permanent generation at its
    end (the interpreter's exit then has nothing to walk); a caller passing argv keeps its collector."""
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
            "sys.argv = ['kit', '--version']\n"
            "from kit.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count = int(done.stderr.split("frozen")[-1].split()[0])
    assert (count > 0) == frozen, done.stderr
