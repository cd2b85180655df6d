"""What `kit run` writes besides results (issue 29, section 5): the site's jobs/, plans/ and logs/
folders and this machine's submission records under .kit/. When one of them cannot be written (a
file where a folder goes), `kit run --site local` ends in one error line naming it, exit 2, no
traceback; a failure before submission runs no pair, and one after the pairs ran loses none of them:
the next run finds them complete.

The worker is the real `kit shard` with the stub engine (tests/faults/stub_worker.py), started by
the real local scheduler through the job script kit writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from inprocess import kit_in_process as kit  # noqa: E402
from test_hostile_inputs import refused  # noqa: E402
from test_signals_and_races import LANGS, STUB, checkpoints, make_project  # noqa: E402


@pytest.fixture
def project(tmp_path) -> Path:
    """The fault suite's project with a local site whose jobs run the stub worker."""
    make_project(tmp_path)
    (tmp_path / "stub").mkdir()
    wrapper = tmp_path / "stub-python"
    wrapper.write_text(f"#!/bin/sh\nexport STUB_DIR={tmp_path}/stub\nexec {sys.executable} {STUB} \"$@\"\n")
    wrapper.chmod(0o755)
    (tmp_path / "sites.toml").write_text(
        f'[site.here]\nscheduler = "local"\nruntime = "host"\npython = "{wrapper}"\nroot = "{tmp_path}/work"\n'
        f'results = "{tmp_path}/results"\nweights = "{tmp_path}/hub"\nwalltime = "10m"\ngpus_per_node = 0\n')
    return tmp_path


def run(project: Path, *extra: str):
    return kit("run", "--site", "here", "--roster", str(project / "roster.toml"), *extra, cwd=project)


@pytest.mark.parametrize("blocked", ["work", "work/jobs", "work/plans", "work/logs"])
def test_a_file_where_run_writes_a_folder_is_one_line_and_no_pair_runs(project, blocked):
    path = project / blocked
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a user's file\n")
    refused(run(project), blocked.split("/")[-1])
    assert path.read_text() == "a user's file\n"
    assert checkpoints(project / "results") == []


def test_a_local_job_whose_record_cannot_be_written_does_not_start(project):
    """A local job is recorded as it starts (so that status and a second run see it live): a record that
    cannot be written refuses the run in one line before any pair runs, and the run after the fix runs them."""
    (project / ".kit").write_text("not a folder\n")
    r = run(project)
    refused(r, ".kit")
    assert checkpoints(project / "results") == [], "a job ran that kit could not record"
    (project / ".kit").unlink()
    again = run(project, "--json")
    assert again.returncode == 0, again.stderr
    assert checkpoints(project / "results") == list(LANGS)
    data = json.loads(run(project, "--json").stdout)["data"]
    assert data["submitted"] == [] and data["pending"] == 0, data
