"""kit.launch.tracking: a damaged records file costs its damaged lines, and one that is not a file is
bad input naming it, never a traceback in `kit status` or `kit cancel`."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from kit.errors import ConfigError
from kit.launch.tracking import SubmissionRecord, load_records, records_file


def _record(job: str) -> SubmissionRecord:
    return SubmissionRecord(site="local", scheduler="local", job_ids=[job], slots=[0], shard_count=1,
                            pairs=[["org/m", "en"]], plan_file="plan.json", script="job.sh", command=["kit"])


def test_a_line_of_invalid_utf8_is_skipped_and_the_others_kept(tmp_path, capsys):
    """The damaged lines cost their records only, and are said (a job they recorded is unknown to status
    and cancel, which would otherwise call it unclaimed or leave it running without a word)."""
    path = records_file(tmp_path, "local")
    path.parent.mkdir(parents=True)
    good = [json.dumps(asdict(_record(job))).encode() for job in ("1", "2")]
    path.write_bytes(good[0] + b"\n" + b'{"site": "\xff\xfe"}\n' + good[1] + b"\ngarbage{\n\n")
    assert [r.job_ids for r in load_records(tmp_path, "local")] == [["1"], ["2"]]
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("kit: warning: ") and "local.jsonl" in said[0]
    assert "line(s) 2, 4 " in said[0]   # the blank line last is no record, and no damage


def test_a_folder_at_the_records_path_is_bad_input_naming_it(tmp_path):
    path = records_file(tmp_path, "local")
    path.mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"local\.jsonl: the job records file is not a regular file") as err:
        load_records(tmp_path, "local")
    assert "local.jsonl.bak" in err.value.fix


@pytest.mark.parametrize("field,value", [("shard_count", 0), ("pairs", "abc"), ("slots", None), ("job_ids", 5),
                                         ("slots", [3]), ("pairs", [["org/m"]]), ("exit_codes", {"1": "x"}),
                                         ("shard_count", True)])
def test_a_record_with_a_field_of_the_wrong_type_is_skipped_as_damaged(tmp_path, capsys, field, value):
    """A line edited by hand that still parses: skipped and said like any damaged line, never a traceback
    (ZeroDivisionError, TypeError) in status or cancel."""
    path = records_file(tmp_path, "local")
    path.parent.mkdir(parents=True)
    bad = {**asdict(_record("1")), field: value}
    path.write_text(json.dumps(bad) + "\n" + json.dumps(asdict(_record("2"))) + "\n")
    assert [r.job_ids for r in load_records(tmp_path, "local")] == [["2"]]
    assert "line(s) 1 " in capsys.readouterr().err


def test_a_submission_recorded_again_takes_the_place_of_its_record_and_a_reused_id_does_not(tmp_path):
    """A job run here is recorded when it starts and again when it ends: the second record takes the
    place of the first (a later submission stays the newer one); a new submission whose cluster reused
    an old id is added, the old record kept."""
    from kit.launch.tracking import append_record

    append_record(tmp_path, _record("local-1-2-0"))
    append_record(tmp_path, _record("7"))
    append_record(tmp_path, SubmissionRecord(**{**asdict(_record("local-1-2-0")), "exit_codes": {"local-1-2-0": 0}}),
                  update=True)
    append_record(tmp_path, _record("7"))
    records = load_records(tmp_path, "local")
    assert [(r.job_ids, r.exit_codes) for r in records] == [(["local-1-2-0"], {"local-1-2-0": 0}), (["7"], {}),
                                                            (["7"], {})]
