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
