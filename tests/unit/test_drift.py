"""Drift: `kit reproduce --as` (what may be changed on purpose, and the roster run it makes), the paired
change a verdict records, and the drift table `kit report` builds from verdicts (drift.csv, the index's
section, a page per rerun), with hostile verdict files left out or escaped."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import pytest
from inprocess import kit_in_process as kit
from conftest_checkpoints import predictions_of, write_job_checkpoint

from kit.errors import ConfigError
from kit.repro.compare import Tolerance, compare, settings_differences
from kit.repro.deliberate import Deliberate, changed_run, check_applies, parse_as, parse_engine_env
from kit.repro.resolve import ResolvedImage
from kit.repro.verdict_report import verdict_data, write_verdict
from kit.results import keys
from kit.results.drift import drift_csv, drift_rows, setup_label
from kit.results.html_page import INDEX, PAGES
from kit.results.metrics import compute_metrics
from kit.results.verdicts import read_verdicts

HOSTILE = "<script>alert('x')</script>"


# --- what --as accepts ---------------------------------------------------------------------------

def test_as_reads_engines_by_their_common_names_and_dtypes():
    assert parse_as(("bfloat16",), None) == Deliberate(dtype="bfloat16")
    assert parse_as(("vLLM", "float16"), None) == Deliberate(backend="vllm", dtype="float16")
    assert parse_as(("llama.cpp",), "org/m-GGUF@" + "a" * 40) == Deliberate("gguf", None, "org/m-GGUF", "a" * 40)
    got = parse_as(("vllm",), None, ("enforce_eager=true", "max_num_seqs=8", "max_model_len=2048"))
    assert got.options == {"enforce_eager": True, "max_num_seqs": 8, "max_model_len": 2048}
    assert got.as_dict() == {"backend": "vllm", "options": {"enforce_eager": True, "max_model_len": 2048,
                                                            "max_num_seqs": 8}}
    assert not parse_as((), None)


@pytest.mark.parametrize("values, model, options, words", [
    (("float64",), None, (), "neither an engine nor a dtype"),
    (("bfloat16", "float16"), None, (), "a second dtype"),
    (("vllm", "gguf"), "o/m", (), "a second engine"),
    (("gguf",), None, (), "--as-model"),
    (("gguf", "bfloat16"), "o/m", (), "ignores dtype"),
    (("vllm",), "o/m", (), "only an engine that reads another format"),
    (("gguf",), "not a model", (), "is not ORG/NAME"),
    (("vllm",), None, ("gguf_file=x",), "vllm does not read it"),
    (("vllm",), None, ("enforce_eager",), "is not KEY=VALUE"),
    (("vllm",), None, ("max_model_len={a=1}",), "not a text, number"),
    (("vllm",), None, ("max_model_len=nan",), "not a text, number"),
    ((), None, ("enforce_eager=true",), "without --as"),
])
def test_as_refuses_what_it_cannot_mean_naming_the_value(values, model, options, words):
    with pytest.raises(ConfigError, match=words):
        parse_as(values, model, options)


def test_each_setup_of_one_result_gets_its_own_verdict_file_name():
    from kit.repro.reproduce import as_suffix

    names = [as_suffix(parse_as(v, m)) for v, m in ((("bfloat16",), None), (("vllm", "bfloat16"), None),
                                                     (("gguf",), "org/m-Q4-GGUF"), (("gguf",), "org/m-Q8-GGUF"))]
    assert names == ["-as-bfloat16", "-as-vllm-bfloat16", "-as-gguf-m-Q4-GGUF", "-as-gguf-m-Q8-GGUF"]
    assert as_suffix(Deliberate()) == ""


def test_engine_env_takes_engine_settings_only():
    assert parse_engine_env(("VLLM_CPU_KVCACHE_SPACE=1", "OMP_NUM_THREADS=2")) == {
        "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"}
    for bad in ("HF_TOKEN=x", "VLLM_API_KEY=x", "PATH=/tmp", "LD_PRELOAD=/x.so", "VLLM_X"):
        with pytest.raises(ConfigError):
            parse_engine_env((bad,))


def _meta(**extra):
    return {keys.METADATA: {keys.BACKEND: "transformers-5.17", keys.TASK: "generate", keys.DTYPE: "float32", **extra}}


def test_a_change_that_is_no_change_or_cannot_run_the_task_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="the backend the result ran on"):
        check_applies(Deliberate(backend="transformers-5.17"), _meta(), tmp_path)
    with pytest.raises(ConfigError, match="the dtype the result ran with"):
        check_applies(Deliberate(dtype="float32"), _meta(), tmp_path)
    with pytest.raises(ConfigError, match="does not run on vllm"):
        check_applies(Deliberate(backend="vllm"), _meta(**{keys.TASK: "score"}), tmp_path)
    check_applies(Deliberate(backend="vllm"), _meta(), tmp_path)   # a generate result on vLLM: fine
    with pytest.raises(ConfigError, match="does not read it"):   # a dtype rerun's options are its own engine's
        check_applies(parse_as(("bfloat16",), None, ("bad key=1",)), _meta(), tmp_path)
    check_applies(parse_as(("bfloat16",), None, ("score_kind=\"yes_no\"",)), _meta(), tmp_path)


def test_the_changed_run_drops_the_old_engines_options_and_swaps_the_model():
    run = {"model": "org/m", "revision": "b" * 40, "backend": "transformers-5.17", "dtype": "float32",
           "trust_remote_code": False, "options": {"score_kind": "yes_no", "attention_heads": 8}}
    vllm = changed_run(run, parse_as(("vllm",), None, ("enforce_eager=true",)), None)
    assert vllm["backend"] == "vllm" and vllm["options"] == {"attention_heads": 8, "enforce_eager": True}
    assert vllm["model"] == "org/m" and vllm["revision"] == "b" * 40
    gguf = changed_run(run, parse_as(("gguf",), "org/m-GGUF"), "c" * 40)
    assert (gguf["model"], gguf["revision"], gguf["backend"]) == ("org/m-GGUF", "c" * 40, "gguf")
    assert "trust_remote_code" not in gguf
    bf16 = changed_run(run, parse_as(("bfloat16",), None), None)
    assert bf16 == {**run, "dtype": "bfloat16"}


def test_reproduce_refuses_as_with_against_in_one_line(tmp_path):
    result = tmp_path / "r.json"
    result.write_text("{}", encoding="utf-8")
    for args, word in ((("--as", "bfloat16", "--against", str(result)), "--against"), (("--as", "float64"), "float64"),
                       (("--engine-env", "HF_TOKEN=x"), "HF_TOKEN")):
        r = kit("reproduce", str(result), *args, cwd=tmp_path)
        assert r.returncode == 2 and word in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "reproduce").exists()


# --- the verdict's paired change and the drift table ---------------------------------------------

PAIRS = [("yes", "yes")] * 8 + [("yes", "no")] * 2 + [("no", "no")] * 7 + [("no", "yes")] * 3   # 20 items


def _checkpoint(results: Path, run: str, language: str, pairs, *, dtype: str = "float32", gpu=None) -> dict:
    preds = predictions_of(pairs)
    meta = {keys.MODEL_ID: run, keys.RUN: run, keys.LANGUAGE: language, keys.MODEL_REVISION: "1" * 40,
            keys.BACKEND: "transformers-5.17", keys.TASK: "generate", keys.DTYPE: dtype, keys.BATCH_SIZE: 8,
            keys.MAX_NEW_TOKENS: 8}
    data = {keys.METADATA: meta, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds}
    path = write_job_checkpoint(results / language / f"{run.replace('/', '__')}.json", data)
    data = json.loads(path.read_text(encoding="utf-8"))
    data[keys.PROVENANCE].update({keys.PROV_PACKAGES: {"transformers": "5.17.0"}, keys.PROV_KIT_VERSION: "0.1.0",
                                  keys.PROV_HARDWARE: {keys.HW_GPU_NAME: gpu, keys.HW_DRIVER: "550.54" if gpu else None}})
    return data


def _rerun_of(recorded: dict, flips: dict[int, str], *, dtype: str, gpu=None) -> dict:
    rerun = json.loads(json.dumps(recorded))
    for i, predicted in flips.items():
        rerun[keys.PREDICTIONS][i].update({keys.PREDICTED: predicted, keys.RAW_OUTPUT: predicted})
    rerun[keys.METRICS] = compute_metrics(rerun[keys.PREDICTIONS])
    rerun[keys.METADATA][keys.DTYPE] = dtype
    rerun[keys.PROVENANCE][keys.PROV_HARDWARE] = {keys.HW_GPU_NAME: gpu, keys.HW_DRIVER: "560.1" if gpu else None}
    return rerun


def _write_verdict(out: Path, path: Path, recorded: dict, rerun: dict, deliberate: Deliberate) -> Path:
    cmp = compare(recorded, rerun, Tolerance())
    image = ResolvedImage("host", None, None, None, False, "host", deliberate=True)
    data = verdict_data(path, recorded, rerun, cmp, Tolerance(), image, settings_differences(recorded, rerun), deliberate)
    stem = f"{path.stem}-{recorded[keys.METADATA][keys.LANGUAGE]}-as-{deliberate.dtype or 'gpu'}"
    return write_verdict(out, stem, data)[0]


def test_a_verdict_records_both_setups_and_the_hand_checked_paired_change(tmp_path):
    results = tmp_path / "results"
    recorded = _checkpoint(results, "org/m", "en", PAIRS)
    # items 0 and 1 were right (yes/yes) and turn wrong; item 8 (yes/no, wrong) turns right
    rerun = _rerun_of(recorded, {0: "no", 1: "unparsed", 8: "yes"}, dtype="bfloat16")
    path = results / "en" / "org__m.json"
    verdict = json.loads(_write_verdict(tmp_path / "reproduce", path, recorded, rerun,
                                        Deliberate(dtype="bfloat16")).read_text(encoding="utf-8"))
    paired = verdict["paired"]
    # recorded: tp 8, fn 2, tn 7, fp 3 -> F1 16/21; rerun: tp 7, fn 2, unparsed 1, tn 7, fp 3 -> F1 14/19
    assert paired["f1"]["b"] == pytest.approx(16 / 21) and paired["f1"]["a"] == pytest.approx(14 / 19)
    assert paired["f1"]["diff"] == pytest.approx(14 / 19 - 16 / 21)
    assert paired["f1"]["low"] <= paired["f1"]["diff"] <= paired["f1"]["high"] < 0.2
    assert (paired["items"], paired["changed"]) == (20, 3)
    assert (paired["only_rerun_right"], paired["only_recorded_right"]) == (1, 2)
    from scipy.stats import binomtest

    assert paired["p_value"] == pytest.approx(binomtest(1, 3, 0.5).pvalue)
    assert verdict["deliberate"] == {"dtype": "bfloat16"}
    assert verdict["setups"]["rerun"]["dtype"] == "bfloat16" and verdict["setups"]["recorded"]["engine_version"] == "5.17.0"
    assert "A deliberate rerun" in verdict["note"]


def test_the_report_gathers_verdicts_into_a_drift_table_linked_to_each_rerun(tmp_path):
    from kit.results.report import write_report

    results = tmp_path / "results"
    for language in ("de", "en"):
        recorded = _checkpoint(results, "org/m", language, PAIRS, gpu="NVIDIA A100-SXM4-40GB")
        path = results / language / "org__m.json"
        _write_verdict(tmp_path / "reproduce-drift", path, recorded,
                       _rerun_of(recorded, {0: "no"}, dtype="bfloat16", gpu="NVIDIA A100-SXM4-40GB"),
                       Deliberate(dtype="bfloat16"))
        _write_verdict(tmp_path / "reproduce-gpus", path, recorded,
                       _rerun_of(recorded, {}, dtype="float32", gpu="NVIDIA H100 80GB HBM3"), Deliberate())
    out = tmp_path / "report"
    write_report(results, out)
    rows = list(csv.DictReader((out / "drift.csv").open(encoding="utf-8")))
    assert len(rows) == 4
    bf16 = [r for r in rows if "bfloat16" in r["rerun_setup"]]
    assert {r["changed"] for r in bf16} == {"1"} and {r["changed_pct"] for r in bf16} == {"5.00"}
    assert all(float(r["f1_low"]) <= float(r["f1_change"]) <= float(r["f1_high"]) for r in rows)
    h100 = [r for r in rows if "H100" in r["rerun_setup"]]
    assert {r["changed"] for r in h100} == {"0"} and "driver 560.1" in h100[0]["rerun_setup"]
    assert h100[0]["deliberate"] == "" and bf16[0]["deliberate"] == "dtype bfloat16"
    index = (out / INDEX).read_text(encoding="utf-8")
    assert "Drift between setups" in index and (out / "drift.png").read_bytes().startswith(b"\x89PNG")
    pages = sorted((out / PAGES).glob("rerun-*.html"))
    assert len(pages) == 4
    for page in pages:   # each number links to its rerun's page, which names both setups
        assert index.count(f'href="{PAGES}/{page.name}"') >= 4
        text = page.read_text(encoding="utf-8")
        assert "recorded setup" in text and "F1 change" in text
    # without the verdicts, the next report holds no drift files of the earlier one
    write_report(results, out, verdicts=[])
    assert not (out / "drift.csv").exists() and not (out / "drift.png").exists()
    assert not list((out / PAGES).glob("rerun-*.html"))


def test_a_hostile_verdict_is_escaped_or_left_out_of_the_drift_table(tmp_path):
    from kit.results.report import write_report

    results = tmp_path / "results"
    recorded = _checkpoint(results, "org/m", "en", PAIRS)
    path = results / "en" / "org__m.json"
    good = _write_verdict(tmp_path / "reproduce", path, recorded, _rerun_of(recorded, {0: "no"}, dtype="bfloat16"),
                          Deliberate(dtype="bfloat16"))
    data = json.loads(good.read_text(encoding="utf-8"))
    data["setups"]["rerun"]["gpu"] = HOSTILE
    data["setups"]["rerun"]["backend"] = "=HYPERLINK(\"http://x\")"
    data["differing_items"][0]["rerun_output"] = HOSTILE
    good.write_text(json.dumps(data), encoding="utf-8")
    infinite = {**data["paired"], "f1": {**data["paired"]["f1"], "high": float("inf")}}
    for name, paired in (("nan", {**data["paired"], "changed": "NaN"}), ("more", {**data["paired"], "changed": 99}),
                         ("shape", {"f1": [1, 2]}), ("inf", infinite)):
        (tmp_path / "reproduce" / f"reproduce-org__m-en-{name}.json").write_text(
            json.dumps({**data, "paired": paired}), encoding="utf-8")
    verdicts, unread = read_verdicts([tmp_path / "reproduce"])
    assert len(verdicts) == 5 and not unread
    rows = drift_rows(verdicts)
    assert len(rows) == 1   # those whose paired change is not finite numbers, or has more changes than items
    assert next(csv.DictReader(drift_csv(rows).splitlines()))["rerun_setup"].startswith("'=HYPERLINK")
    out = tmp_path / "report"
    write_report(results, out)
    pages = "".join(p.read_text(encoding="utf-8") for p in (out / PAGES).glob("rerun-*.html"))
    index = (out / INDEX).read_text(encoding="utf-8")
    assert "<script" not in index + pages and html.escape(HOSTILE) in pages


def test_a_setup_label_names_engine_dtype_and_device():
    assert setup_label({"backend": "vllm", "engine_version": "0.32.0", "dtype": "bfloat16", "gpu": "NVIDIA H100",
                        "driver": "560.1", "kit": "0.1.0"}) == "vllm 0.32.0 · bfloat16 · NVIDIA H100 (driver 560.1) · kit 0.1.0"
    assert setup_label({"backend": "gguf", "dtype": "GGUF Q4_K_M"}) == "gguf · GGUF Q4_K_M · CPU"


def test_the_demo_names_each_setup_it_cannot_run_with_its_fix(tmp_path):
    from kit.demo.drift import drift_setups
    from kit.images.built import ImagesLock

    lock_path = tmp_path / "images.lock.json"
    setups, skipped = drift_setups(tmp_path / "hub", None, lock_path, lambda image_id: True)
    assert [s.as_values for s in setups] == [("bfloat16",)] and setups[0].runtime == "host"
    assert set(skipped) == {"llama.cpp", "vLLM"} and "make image-vllm VARIANT=cpu" in skipped["vLLM"]
    built = {"tag": "kit/vllm:0.32.0-cpu", "image_id": "sha256:" + "a" * 64, "base": "kit/base:bookworm",
             "kit_version": "0.1.0", "built_at": "2026-12-05T00:00:00Z", "dockerfile_sha256": "b" * 64,
             "lock_sha256": "c" * 64}
    lock = ImagesLock.model_validate({"images": {"vllm": {"backend": "vllm", **built}}})
    setups, skipped = drift_setups(tmp_path / "hub", lock, lock_path, lambda image_id: False)
    assert "not in this machine's Docker engine" in skipped["vLLM"] and len(setups) == 1
    setups, skipped = drift_setups(tmp_path / "hub", lock, lock_path, lambda image_id: image_id == built["image_id"])
    vllm = setups[1]
    assert (vllm.as_values, vllm.runtime, vllm.task) == (("vllm",), "docker", "generate")
    assert parse_as(vllm.as_values, vllm.as_model, vllm.as_options).options == {"enforce_eager": True}
    assert parse_engine_env(vllm.engine_env) == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    assert "records no gguf image" in skipped["llama.cpp"]
