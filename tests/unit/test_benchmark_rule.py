"""One meaning for `--benchmark` (kit.results.benchmark_rule): `kit verify`, `kit status` and `kit report`
give the same verdict on the same file held to the same benchmark, lrb's language-less files included
(held to the language file whose digest they record)."""

from __future__ import annotations

import json
from pathlib import Path

import lrb_schema as lrb
import pytest

from inprocess import kit_in_process
from kit.config.kinds import load_benchmark

NOT_OF = "is the digest of none of the benchmark's 85 language files"


def _language_less_file(results: Path, bench: Path, *, digest: str | None = None, flip: bool = False) -> Path:
    """An lrb single-language result at RESULTS/<run>.json on the benchmark's 'en' items and labels (its
    digest recorded, or `digest`); `flip`: the first expected label is not the benchmark's."""
    dataset = load_benchmark(bench)
    answers = dataset.expected_answers("en")
    preds = [lrb.prediction(i, answers[i], answers[i], answers[i]) for i in dataset.item_ids("en")]
    if flip:
        first = preds[0]
        other = "no" if first["expected"] == "yes" else "yes"
        preds[0] = lrb.prediction(first["item_id"], other, other, other)
    data = lrb.result("org/model", None, preds, benchmark_sha256=digest or dataset.pinned_sha256("en"))
    path = results / lrb.file_name(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _three(results: Path, bench: Path, tmp_path: Path) -> tuple[str, dict, dict]:
    """verify's output line, status's pair and report's counts for one tree held to `bench`."""
    env = {"KIT_NO_CACHE": "1"}
    verify = kit_in_process("verify", str(results), "--benchmark", str(bench), cwd=tmp_path, env=env)
    status = kit_in_process("status", str(results), "--benchmark", str(bench), "--json", cwd=tmp_path, env=env)
    report = kit_in_process("report", str(results), "--benchmark", str(bench), "-o", str(tmp_path / "out"),
                            "--json", cwd=tmp_path, env=env)
    [pair] = json.loads(status.stdout)["data"]["pairs"]
    return verify.stdout, pair, json.loads(report.stdout or "{}") | {"code": report.returncode, "err": report.stderr}


def test_a_language_less_file_is_held_to_the_language_file_of_its_digest(lrb_bench: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    path = _language_less_file(results, lrb_bench)
    verify, pair, report = _three(results, lrb_bench, tmp_path)
    assert verify.startswith(f"OK    {path}") and "held to the benchmark's 'en' file" in verify
    assert pair["state"] == "complete" and any("held to the benchmark's 'en' file" in n for n in pair["notices"])
    assert report["code"] == 0 and report["data"]["pairs"] == 1


def test_a_language_less_file_with_a_wrong_label_fails_everywhere(lrb_bench: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    path = _language_less_file(results, lrb_bench, flip=True)
    verify, pair, report = _three(results, lrb_bench, tmp_path)
    assert verify.startswith(f"FAIL  {path}: predictions[0].expected")
    assert pair["state"] == "invalid" and "is not the benchmark's" in pair["reasons"][0]
    assert report["code"] == 2 and "no complete checkpoint" in report["err"]


@pytest.mark.parametrize("where", ["", "batch-20260913"])
def test_a_file_of_another_benchmark_is_stale_in_every_command(lrb_bench: Path, tmp_path: Path, where: str) -> None:
    results = tmp_path / "results"
    path = _language_less_file(results / where, lrb_bench, digest="ac185e51835eb626" + "0" * 48)
    verify, pair, report = _three(results, lrb_bench, tmp_path)
    assert verify.startswith(f"FAIL  {path}: metadata.benchmark_sha256 ac185e51835eb626... {NOT_OF}")
    assert pair["state"] == "stale" and NOT_OF in pair["reasons"][0]
    assert report["code"] == 2 and "(1 invalid or stale)" in report["err"]
    # without a benchmark nothing is held: the file is sound in itself
    r = kit_in_process("status", str(results), "--json", cwd=tmp_path, env={"KIT_NO_CACHE": "1"})
    assert [p["state"] for p in json.loads(r.stdout)["data"]["pairs"]] == ["complete"]


def test_a_file_of_an_older_version_of_its_language_file_is_stale_in_every_command(lrb_bench: Path,
                                                                                   tmp_path: Path) -> None:
    results = tmp_path / "results"
    dataset = load_benchmark(lrb_bench)
    answers = dataset.expected_answers("fr")
    preds = [lrb.prediction(i, answers[i], answers[i], answers[i]) for i in dataset.item_ids("fr")]
    path = lrb.write(results, lrb.result("org/model", "fr", preds, benchmark_sha256="b" * 64))
    verify, pair, report = _three(results, lrb_bench, tmp_path)
    assert verify.startswith(f"FAIL  {path}: metadata.benchmark_sha256 is 'bbbb")
    assert pair["state"] == "stale" and pair["reasons"][0].startswith("metadata.benchmark_sha256 is 'bbbb")
    assert report["code"] == 2


def test_a_language_whose_data_file_is_not_here_fails_its_files_alone(lrb_bench: Path, tmp_path: Path) -> None:
    """A benchmark copy holding only some of its language files (as the shared one, en/fr/ja of 85): a
    file of a language whose data is not here cannot be held to it and is not counted, said with the
    file to copy, and every other file still gets its verdict (status, verify and report alike)."""
    dataset = load_benchmark(lrb_bench)
    results = tmp_path / "results"
    for language in ("en", "de"):
        ids = dataset.item_ids(language)
        answers = dataset.expected_answers("en") if language == "en" else {i: "yes" for i in ids}
        preds = [lrb.prediction(i, answers[i], answers[i], answers[i]) for i in ids]
        lrb.write(results, lrb.result("org/model", language, preds, benchmark_sha256=dataset.pinned_sha256(language)))
    env = {"KIT_NO_CACHE": "1"}
    verify = kit_in_process("verify", str(results), "--benchmark", str(lrb_bench), cwd=tmp_path, env=env)
    assert verify.returncode == 1 and "1 verified, 1 failed" in verify.stdout
    [failed] = [line for line in verify.stdout.splitlines() if line.startswith("FAIL")]
    assert "de/org__model.json: cannot be checked against its benchmark" in failed
    assert "v3-final-de.csv: not found: the file for language 'de'" in failed and "copy it from" in failed
    status = kit_in_process("status", str(results), "--benchmark", str(lrb_bench), "--json", cwd=tmp_path, env=env)
    states = {p["language"]: p["state"] for p in json.loads(status.stdout)["data"]["pairs"]}
    assert states == {"en": "complete", "de": "invalid"}
    report = kit_in_process("report", str(results), "--benchmark", str(lrb_bench), "-o", str(tmp_path / "out"),
                            "--json", cwd=tmp_path, env=env)
    assert report.returncode == 1 and json.loads(report.stdout)["data"]["pairs"] == 1   # (1: an invalid file listed)
