"""The fast tier on a brand-new machine: the packages of the programs it runs are installed before it
starts (never raced by the background install), and a fast-tier run that starts a program from any
other package fails (tests/programs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import programs

REPO = Path(__file__).resolve().parents[2]


def _plan() -> list[tuple[str, str, str]]:
    # a test.sh without --plan would take the flag for pytest's and set up everything: never run it
    assert 'scripts/test.sh --plan' in (REPO / "scripts" / "test.sh").read_text(encoding="utf-8"), \
        "scripts/test.sh cannot print its phases (--plan), so the order of its installs cannot be checked"
    r = subprocess.run(["bash", str(REPO / "scripts" / "test.sh"), "--plan"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "KIT_TEST_LOGS": "/nonexistent/kit-plan"})
    assert r.returncode == 0, r.stderr
    rows = [tuple(line.split("\t", 2)) for line in r.stdout.splitlines()]
    assert rows and all(len(row) == 3 and row[0] in ("fg", "bg") for row in rows), r.stdout
    return rows   # type: ignore[return-value]


def test_the_fast_tier_s_packages_are_installed_and_waited_for_before_the_fast_tier_starts():
    rows = _plan()
    fast = next(i for i, (_, name, _) in enumerate(rows) if name.startswith("tests: fast tier"))
    installs = [i for i, (where, _, cmd) in enumerate(rows) if where == "fg" and "packages.sh --fast-tier" in cmd]
    assert installs and installs[0] < fast, rows
    # the fast tier records what it runs, so that the check below applies to it
    assert "KIT_TEST_TIER=fast" in rows[fast][2]
    # and no other test run starts before the fast tier
    assert all(where == "bg" or "pytest" not in cmd for where, _, cmd in rows[:fast])


def test_the_fast_tier_s_packages_are_among_those_the_full_install_names():
    assert programs.packages_sh_list("fast-tier") <= programs.packages_sh_list("all")
    assert "shellcheck" in programs.packages_sh_list("fast-tier")


def test_a_program_from_a_package_neither_the_base_nor_the_fast_tier_install_has_is_named():
    packages = {"/usr/bin/shellcheck": "shellcheck", "/usr/bin/sbatch": "slurm-client", "/bin/bash": "bash"}
    started = {"shellcheck": {Path("/usr/bin/shellcheck")}, "sbatch": {Path("/usr/bin/sbatch")},
               "bash": {Path("/bin/bash")}, "squeue": {None}}
    missing = programs.missing_on_a_new_machine(started, allowed={"shellcheck"},
                                                package_of=lambda f: packages[str(f)],
                                                in_base=lambda pkg: pkg == "bash")
    assert [(m.program, m.package) for m in missing] == [("sbatch", "slurm-client"), ("squeue", None)]
    assert "add it to FAST_TIER" in str(missing[0]) and "not found" in str(missing[1])


def test_programs_of_this_checkout_its_python_or_a_test_s_temporary_folder_need_no_package(tmp_path):
    fake = tmp_path / "oarsub"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    assert programs.ours(fake) and programs.ours(Path(sys.executable))
    assert programs.missing_on_a_new_machine({"oarsub": {fake}, "python": {Path(sys.executable)}}, allowed=set(),
                                             package_of=lambda f: None, in_base=lambda p: False) == []


def test_the_recorder_sees_each_way_a_program_is_started(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    script.chmod(0o755)
    with programs.Recorder() as rec:
        subprocess.run([str(script)], check=True)
        subprocess.run("true", shell=True, check=True)
        os.system("uname >/dev/null")
        pid = os.posix_spawn("/bin/echo", ["/bin/echo"], {"PATH": "/usr/bin"})
        os.waitpid(pid, 0)
    assert {str(script), "/bin/sh", "uname", "/bin/echo"} <= set(rec.started)
    assert rec.started[str(script)] == {script}
    # once the recorder is closed, nothing more is recorded
    subprocess.run(["true"], check=True)
    assert "true" not in rec.started


def test_the_recorder_sees_the_program_a_wrapper_starts_in_the_wrapper_s_path(tmp_path):
    (tmp_path / "mytool").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "mytool").chmod(0o755)
    with programs.Recorder() as rec:
        subprocess.run(["env", "-i", "A=1", "true"], check=True)
        subprocess.run(["timeout", "-s", "KILL", "5", "uname"], check=True, capture_output=True)
        subprocess.run(["env", "-i", f"PATH={tmp_path}", "mytool"], check=True)
        subprocess.run(["timeout", "5", "env", "-u", "X", "mytool"], check=True, env={"PATH": f"{tmp_path}:/usr/bin"})
    assert {"env", "true", "timeout", "uname", "mytool"} <= set(rec.started)
    assert rec.started["mytool"] == {tmp_path / "mytool"}


def test_the_recorder_resolves_with_the_child_s_path_at_the_moment_of_the_call(tmp_path, monkeypatch):
    (tmp_path / "mytool").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "mytool").chmod(0o755)
    with programs.Recorder() as rec:
        subprocess.run(["mytool"], env={"PATH": str(tmp_path)}, check=True)
        monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
        subprocess.run(["mytool"], check=True)
        monkeypatch.undo()
    assert rec.started == {"mytool": {tmp_path / "mytool"}}


@pytest.mark.skipif(not Path("/var/lib/dpkg/status").is_file(), reason="needs dpkg (Debian)")
def test_dpkg_names_the_package_of_a_base_program_and_its_priority():
    assert programs.dpkg_package(Path("/bin/bash")) == "bash" and programs.required_priority("bash")
    assert programs.dpkg_package(Path("/usr/bin/bash")) == "bash"   # merged /usr
    assert programs.dpkg_package(Path("/nonexistent/tool")) is None


def test_a_missing_program_of_a_test_s_own_folder_is_not_a_machine_s_lack(tmp_path):
    gone = tmp_path / "no-such-check"
    missing = programs.missing_on_a_new_machine({str(gone): {None}, "no-such-tool": {None}}, allowed=set())
    assert [m.program for m in missing] == ["no-such-tool"]
