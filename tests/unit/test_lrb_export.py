"""`kit export lrb` (kit.results.kinds.lrb.export): values lrb's file cannot hold stop the export before any
file is written, and lrb's own fields (device_name, the per-generation counters, the speed section,
the scorer's raw output) come through as lrb writes them. lrb files are built from tests/lrb_schema.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import lrb_schema as lrb
import pytest

from kit.errors import ConfigError
from kit.results.kinds.lrb.export import export_lrb, lrb_result
from kit.results.metrics import compute_metrics


def _results(tmp_path: Path) -> Path:
    """Two lrb files: org/a (exported first) and org/b, three predictions each."""
    root = tmp_path / "results"
    for model in ("org/a", "org/b"):
        preds = [lrb.prediction(f"i-{i}", "yes", "yes", "yes") for i in range(3)]
        lrb.write(root, lrb.result(model, "en", preds, throughput_items_per_second=24.0))
    return root


def _poison(path: Path, old: str, new: str) -> None:
    """Replace the first `old` of the file's text by `new`, the raw JSON a hand edit or a foreign writer leaves."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize("old,new,where,what", [
    ('"raw_output": "yes"', '"raw_output": "\\ud800yes"', "predictions[0].raw_output", "lone surrogate"),
    ('"latency_seconds": null', '"latency_seconds": NaN', "predictions[0].latency_seconds", "nan"),
    ('"sentences_per_second": 1.0', '"sentences_per_second": Infinity', "speed.sentences_per_second", "inf"),
    ('"throughput_items_per_second": 24.0', '"throughput_items_per_second": 1e400',
     "metadata.throughput_items_per_second", "inf"),
])
def test_export_writes_nothing_and_names_the_file_and_value_json_cannot_hold(tmp_path, old, new, where, what):
    results = _results(tmp_path)
    bad = results / "en" / "org__b.json"
    _poison(bad, old, new)
    with pytest.raises(ConfigError) as err:
        export_lrb(results, tmp_path / "out")
    assert f"{bad}: {where}" in err.value.message and what in err.value.message
    assert where in (err.value.fix or "")
    assert not (tmp_path / "out").exists()   # org__a.json, converted first, was not written either


def test_the_cli_refuses_such_a_value_with_exit_2_and_one_line(tmp_path):
    results = _results(tmp_path)
    _poison(results / "en" / "org__a.json", '"raw_output": "yes"', '"raw_output": "\\udfffyes"')
    r = subprocess.run([sys.executable, "-m", "kit", "export", "lrb", str(results), "-o", str(tmp_path / "out")],
                       capture_output=True, text=True, env={**os.environ, "KIT_NO_CACHE": "1"})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("kit: error:") == 1 and "predictions[0].raw_output" in r.stderr
    assert not (tmp_path / "out").exists()


def test_export_keeps_lrb_s_device_name_counters_and_speed(tmp_path):
    root = tmp_path / "results"
    preds = [lrb.prediction("i-0", "yes", "yes", "yes"), lrb.prediction("i-1", "no", None, "cut", truncated=True)]
    preds[0].update(latency_seconds=0.5, generated_tokens=3, verify_steps=2, accepted_drafts=1, proposed_drafts=4)
    data = lrb.result("org/a", "en", preds, device_name="NVIDIA L40S", run_id="org/a+DSpark")
    data["speed"].update(wall_seconds=12.5, n_items=2)
    source = lrb.write(root, data)
    done = export_lrb(root, tmp_path / "out")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in done.written] == ["en/org__a+DSpark.json"]
    # lrb's own file comes back byte for byte: nothing of it is lost
    assert done.written[0].read_bytes() == source.read_bytes()
    out = json.loads(done.written[0].read_text(encoding="utf-8"))
    assert out["metadata"]["device_name"] == "NVIDIA L40S" and out["speed"]["wall_seconds"] == 12.5
    assert out["predictions"][0]["generated_tokens"] == 3 and out["predictions"][1]["latency_seconds"] is None
    assert lrb.problems(done.written[0], tmp_path / "out") == []


def test_a_counter_that_is_not_a_number_is_left_out_and_an_empty_device_name_omitted(tmp_path):
    preds = [lrb.prediction("i-0", "yes", "yes", "yes")]
    preds[0].update(latency_seconds="slow", generated_tokens=True)
    out = lrb_result(lrb.result("org/a", "en", preds, device_name=""), "en")
    assert "latency_seconds" not in out["predictions"][0] and "generated_tokens" not in out["predictions"][0]
    assert out["predictions"][0]["verify_steps"] is None and "device_name" not in out["metadata"]


def test_a_score_run_s_raw_output_has_lrb_s_six_decimals_for_every_score():
    pred = {"item_id": "i-0", "expected": "yes", "predicted": "yes", "raw_output": "x", "truncated": False,
            "parse_mode": "score", "score_yes": 0.75, "score_no": 0.25, "native_score": 1.0986122886681098}
    meta = {"model_id": "org/rank", "run": "org/rank", "language": "en", "task": "score", "backend": "b",
            "model_revision": None, "prompt_sha256": "2" * 64, "benchmark_sha256": "a" * 64, "max_new_tokens": 0,
            "batch_size": 1, "seed": 0, "decoding": "score", "dtype": "float32",
            "started_at": "2026-11-29T20:00:00Z", "duration_seconds": 1.5}
    data = {"metadata": meta, "predictions": [pred], "metrics": {}}
    out = lrb_result(data, "en")
    assert out["predictions"][0]["raw_output"] == "no=0.250000 yes=0.750000 native=1.098612"


def _language_less(root: Path, folder: str, predicted: str) -> Path:
    """org/a's result without a language (lrb's single-language layout), at RESULTS/<folder>/<run>.json
    (folder "": RESULTS/<run>.json, lrb's top level; "strict-8-tokens": one of its batch folders)."""
    preds = [lrb.prediction(f"i-{i}", "yes", predicted, predicted) for i in range(3)]
    data = lrb.result("org/a", None, preds, throughput_items_per_second=24.0)
    path = root / folder / lrb.file_name(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return path


def test_lrb_s_top_level_and_batch_copies_come_back_in_their_places_byte_for_byte(tmp_path):
    root = _results(tmp_path)
    top, batch = _language_less(root, "", "yes"), _language_less(root, "strict-8-tokens", "no")
    out = tmp_path / "out"
    done = export_lrb(root, out)
    assert done.refused == {} and len(done.written) == 4, (done.refused, done.written)
    for source in (top, batch, root / "en" / "org__a.json", root / "en" / "org__b.json"):
        assert (out / source.relative_to(root)).read_bytes() == source.read_bytes()
    assert "language" not in json.loads((out / top.name).read_text(encoding="utf-8"))["metadata"]


def test_a_file_not_in_lrb_s_own_bytes_is_written_as_lrb_writes_it(tmp_path):
    root = _results(tmp_path)
    compact = root / "en" / "org__a.json"   # the same result, written compactly: not lrb's bytes
    data = json.loads(compact.read_text(encoding="utf-8"))
    compact.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "out"
    done = export_lrb(root, out)
    assert done.refused == {} and len(done.written) == 2
    written = (out / "en" / "org__a.json").read_bytes()
    assert written != compact.read_bytes()
    assert written == (json.dumps(json.loads(written), indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode()
    assert json.loads(written)["predictions"] == data["predictions"]


def test_lrb_s_archive_is_not_exported_and_said(tmp_path):
    root = _results(tmp_path)
    _language_less(root / "archive" / "old", "", "yes")
    done = export_lrb(root, tmp_path / "out")
    assert len(done.written) == 2 and done.not_counted.startswith("1 file(s) under ")
    assert not (tmp_path / "out" / "archive").exists()


def test_status_pairs_names_the_file_of_two_copies_of_one_pair(tmp_path):
    from inprocess import kit_in_process

    root = _results(tmp_path)
    _language_less(root, "", "yes")
    _language_less(root, "strict-8-tokens", "no")
    r = kit_in_process("status", str(root), "--pairs", cwd=tmp_path)
    rows = [line for line in r.stdout.splitlines() if "org/a" in line and "und" in line]
    assert len(rows) == 2, r.stdout
    assert any("strict-8-tokens" in row for row in rows) and any("strict-8-tokens" not in row for row in rows), rows


def test_a_refused_checkpoint_read_last_leaves_no_file_and_an_earlier_export_as_it_was(tmp_path):
    """Files are written into the staging folder as they are read (only each one's place and digest are
    held); a refusal after some were written drops that folder whole."""
    results = _results(tmp_path)
    out = tmp_path / "out"
    first = export_lrb(results, out)
    assert sorted(p.name for p in first.written) == ["org__a.json", "org__b.json"]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    _poison(results / "en" / "org__a.json", '"throughput_items_per_second": 24.0', '"throughput_items_per_second": 25.0')
    _poison(results / "en" / "org__b.json", '"predicted": "yes"', '"predicted": "maybe"')   # read last: invalid
    again = export_lrb(results, out)
    assert list(again.refused) == [results / "en" / "org__b.json"] and again.written == []
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".kit-staging")]


@pytest.mark.parametrize("old,new", [
    ('"predicted": "yes"', '"predicted": "unparsed"'),   # kit's label, which lrb's loader does not know
    ('"raw_output": "yes",', ''),                          # lrb writes every prediction's raw output
])
def test_a_file_lrb_would_not_write_is_converted_not_given_back(tmp_path, old, new):
    """A file in lrb's own bytes whose predictions lrb never writes (an "unparsed" label, no raw_output:
    another writer or a hand edit) is converted as lrb writes it, which its loader reads: predicted null,
    a raw_output string."""
    root = _results(tmp_path)
    source = root / "en" / "org__a.json"
    _poison(source, old, new)
    data = json.loads(source.read_text(encoding="utf-8"))
    data["metrics"] = compute_metrics(data["predictions"])   # still a valid file: its metrics recompute
    source.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    done = export_lrb(root, tmp_path / "out")
    assert done.refused == {}, done.refused
    written = json.loads((tmp_path / "out" / "en" / "org__a.json").read_text(encoding="utf-8"))
    first = written["predictions"][0]
    assert first["predicted"] in ("yes", "no", None) and isinstance(first["raw_output"], str)
    assert (first["predicted"] is None) is ("unparsed" in new)


@pytest.mark.parametrize("edit", [
    lambda d: d["metadata"].update(foo="bar"),                      # a key lrb's RunMetadata refuses
    lambda d: d["predictions"][0].update(latency_seconds="fast"),   # a counter lrb sums for its speed columns
    lambda d: d["predictions"][1].update(parse_mode="score"),       # no parse mode of lrb's
    lambda d: d.update(notes=["mine"]),                             # a section lrb never writes
])
def test_a_hand_edited_file_in_lrb_s_serialisation_is_converted_not_passed_through(tmp_path, edit):
    """A file written as lrb serialises, but holding what lrb's writer never writes, is no file of lrb's:
    it is converted as lrb writes it (the foreign parts dropped), never given back byte for byte."""
    root = _results(tmp_path)
    path = root / "en" / "org__a.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    done = export_lrb(root, tmp_path / "out")
    written = tmp_path / "out" / "en" / "org__a.json"
    assert path not in done.refused and written.read_bytes() != path.read_bytes(), done.refused
    back = json.loads(written.read_text(encoding="utf-8"))
    assert "foo" not in back["metadata"] and "notes" not in back
    assert all(p.get("parse_mode") in (None, "exact", "leading", "last") and isinstance(p["truncated"], bool)
               and not isinstance(p.get("latency_seconds"), str) for p in back["predictions"])


def test_a_converted_file_of_a_batch_s_language_folder_keeps_its_batch(tmp_path):
    """A file converted on export (here written with another indent) from <batch>/<language>/ goes to the
    same place, never onto the tree's own copy of its pair (kit report keeps batches apart)."""
    root = _results(tmp_path)
    own = root / "en" / "org__a.json"
    data = json.loads(own.read_text(encoding="utf-8"))
    data["predictions"][0]["predicted"] = data["predictions"][0]["raw_output"] = "no"   # another result of the pair
    data["metrics"] = lrb_result(data, "en")["metrics"]   # recomputed from the predictions, as lrb does
    batch = root / "new-models" / "en" / "org__a.json"
    batch.parent.mkdir(parents=True)
    batch.write_text(json.dumps(data, indent=4), encoding="utf-8")
    done = export_lrb(root, tmp_path / "out")
    assert not done.refused, done.refused
    assert (tmp_path / "out" / "en" / "org__a.json").read_bytes() == own.read_bytes()
    moved = json.loads((tmp_path / "out" / "new-models" / "en" / "org__a.json").read_text(encoding="utf-8"))
    assert moved["predictions"][0]["predicted"] == "no"
