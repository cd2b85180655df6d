"""kit report's static HTML report: the pages exist, every link and image resolves to a file of the
report, provenance, compliance verdict and reproduce command are on each result's page, reruns are
shown (or their absence said), and every string from a result or verdict file is escaped."""

from __future__ import annotations

import hashlib
import html
import json
import shlex
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from click.testing import CliRunner
from conftest_checkpoints import predictions_of, write_job_checkpoint

from kit.results import keys
from kit.results.evidence import KIT_ONLY_METADATA
from kit.results.html_page import INDEX, PAGES, OnDemand, slug
from kit.results.metrics import compute_metrics
from kit.results.report import write_report
from kit.results.store import checkpoint_path, dumps_checkpoint, mllog_path, write_checkpoint

pytest.importorskip("matplotlib")

HOSTILE = "<script>alert('x')</script>&\"'"
LANG_HOSTILE = 'zz"><img src=x onerror=alert(1)>'
RUNS = ("org/model-a", "org/model-b@fast")
LANGS = ("en", "fr", LANG_HOSTILE)
# (tp, fp, tn, fn, unparsed) per run, the same in every language; 20 items each
CELLS = {"org/model-a": (9, 1, 8, 1, 1), "org/model-b@fast": (5, 5, 5, 5, 0)}
DIGEST = {"manifest": "a" * 64, "prompt": "b" * 64}


def provenance(run: str, language: str) -> dict:
    return {
        "kit_version": "0.1.0", "kit_commit": "c" * 40,
        "image": {"backend": "transformers-5.17", "digest": "sha256:" + "d" * 64, "artifact": "sif",
                  "artifact_sha256": "e" * 64, "lock_sha256": "f" * 64},
        "model": {"id": run.split("@")[0], "revision": "1" * 40, "weight_files_sha256": {"model.safetensors": "2" * 64}},
        "data": {"manifest_sha256": DIGEST["manifest"], "file_sha256": language.ljust(64, "3")[:64],
                 "prompt_sha256": DIGEST["prompt"]},
        "job": {"site": "nancy", "scheduler": "oar", "job_id": "4242", "array_index": 3, "shard": "3/8",
                "node": "gros-12", "runtime": "apptainer"},
        "hardware": {"gpu_name": HOSTILE + "A100", "gpu_count": 1, "driver": "550.54", "cuda": "12.4", "cpu": "EPYC"},
        "packages": {"python": "3.12.3", "torch": "2.6.0"},
        "unknown": {},
    }


def checkpoint(results: Path, run: str, language: str, cells=None, *, prov: bool = True) -> Path:
    """A kit job's checkpoint with its provenance and log; with prov=False lrb's own file of the pair
    instead (lrb's metadata keys only, no provenance, no log)."""
    tp, fp, tn, fn, unparsed = cells or CELLS[run]
    pairs = ([("yes", "yes")] * tp + [("yes", "no")] * fn + [("yes", "unparsed")] * unparsed
             + [("no", "yes")] * fp + [("no", "no")] * tn)
    preds = predictions_of(pairs)
    meta = {keys.MODEL_ID: run.split("@")[0], keys.RUN: run, keys.LANGUAGE: language, keys.MODEL_REVISION: "1" * 40,
            keys.BACKEND: "transformers-5.17", keys.TASK: "generate", keys.DECODING: "greedy", keys.MAX_NEW_TOKENS: 64,
            keys.MANIFEST_SHA256: DIGEST["manifest"], keys.BENCHMARK_SHA256: language.ljust(64, "3")[:64],
            keys.PROMPT_SHA256: DIGEST["prompt"], keys.DURATION_SECONDS: 1.5, "notes": HOSTILE}
    data = {keys.METADATA: meta, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds, keys.SPEED: {}}
    path = checkpoint_path(results, run, language)
    if prov:
        return write_job_checkpoint(path, {**data, keys.PROVENANCE: provenance(run, language)})
    data[keys.METADATA] = {k: v for k, v in meta.items() if k not in KIT_ONLY_METADATA}
    write_checkpoint(path, data)
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    for run in RUNS:
        for lang in LANGS:
            checkpoint(root, run, lang)
    return root


class _Refs(HTMLParser):
    """The href/src of every <a>, <img>, <link> and <script> of a page, and the tags seen."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.refs.append(value)


def refs_of(page: Path) -> _Refs:
    parser = _Refs()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def html_files(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))


def test_index_language_and_result_pages_exist_and_every_link_resolves(results, tmp_path):
    out = tmp_path / "out"
    outcome = write_report(results, out, verdicts=[])
    assert outcome.files["html"] == out / INDEX
    pages = html_files(out)
    # the index, a page per language, per result, and per pair of neighbouring ranks
    assert len(pages) == 1 + len(LANGS) + len(RUNS) * len(LANGS) + len(RUNS) - 1
    for page in pages:
        parsed = refs_of(page)
        assert "script" not in parsed.tags, page
        for ref in parsed.refs:
            parts = urlsplit(ref)
            assert not parts.scheme and not parts.netloc and not ref.startswith("/"), (page, ref)  # relative only
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file(), (page.name, ref)
            assert out.resolve() in target.parents, (page.name, ref)  # stays inside the report folder
    index_refs = refs_of(out / INDEX).refs
    assert "heatmap_f1.png" in index_refs and "f1_by_language.png" in index_refs
    for run in RUNS:   # index -> each result page -> back to the index and to its language page
        name = f"en/{run.replace('/', '__')}.json"
        assert f"{PAGES}/{slug('result', name)}" in index_refs
        back = refs_of(out / PAGES / slug("result", name)).refs
        assert "../index.html" in back and slug("language", "en") in {Path(r).name for r in back}
    lang_refs = refs_of(out / PAGES / slug("language", "fr")).refs
    assert {Path(r).name for r in lang_refs} >= {slug("result", f"fr/{r.replace('/', '__')}.json") for r in RUNS}
    assert sum(Path(r).name.startswith("compare-") for r in index_refs) == len(RUNS) - 1   # the leaderboard's marks


def test_result_page_has_metrics_interval_provenance_compliance_and_reproduce_command(results, tmp_path):
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    path = checkpoint_path(results, RUNS[0], "fr")
    text = (out / PAGES / slug("result", f"fr/{path.name}")).read_text(encoding="utf-8")
    prov = provenance(RUNS[0], "fr")
    for value in (prov["image"]["digest"], prov["image"]["artifact_sha256"], prov["image"]["lock_sha256"],
                  prov["model"]["revision"], prov["data"]["file_sha256"], prov["data"]["manifest_sha256"],
                  prov["data"]["prompt_sha256"], prov["job"]["job_id"], prov["job"]["node"], "gros-12", "550.54",
                  "model.safetensors", "2" * 64):
        assert html.escape(value) in text, value
    assert html.escape(HOSTILE + "A100") in text          # the GPU name, escaped
    assert html.escape(shlex.join(["kit", "reproduce", str(path)])) in text
    # the fixture's log is seal's two lines, not the MLPerf log a job writes: kit check fails it, and says so
    assert "MLLOG compliance" in text and '<span class="fail">FAIL</span>' in text and "FAIL [mllog_compliant]" in text
    assert "f1 95% CI" in text and "0.9" in text  # f1 of (9, 1, 8, 1, 1) is 0.9


def test_the_compliance_found_while_validating_is_the_page_s_own_under_the_name_the_tree_has_now(
        results, tmp_path, monkeypatch):
    from kit.results import cache
    from kit.results.tree import ResultsTree

    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "RACY_SECONDS", -1.0)   # the test's files are seconds old: taken as settled
    path = checkpoint_path(results, RUNS[0], "fr")
    page = PAGES + "/" + slug("result", f"fr/{path.name}")
    write_report(results, tmp_path / "plain", verdicts=[])   # each page checks its own log
    with ResultsTree(results, sections=True) as tree:        # findings come from the validation (and are cached)
        write_report(results, tmp_path / "checked", verdicts=[], validate_all=tree.validate_all)
    assert (tmp_path / "checked" / page).read_bytes() == (tmp_path / "plain" / page).read_bytes()
    monkeypatch.chdir(results.parent)   # a later report names the same tree otherwise: its findings say so
    with ResultsTree(Path(results.name), sections=True) as tree:
        write_report(Path(results.name), tmp_path / "again", verdicts=[], validate_all=tree.validate_all)
        assert tree.from_cache == len(RUNS) * len(LANGS)
    text = (tmp_path / "again" / page).read_text(encoding="utf-8")
    assert f"FAIL [mllog_compliant] {results.name}/fr/" in text and str(results) not in text


_SYNTHETIC = """
from pathlib import Path
from kit.results import keys
from kit.results.keys import PairState
from kit.results.records import CheckpointRecord

def synthetic_records(count):
    out = []
    for n in range(count):
        run, language = f"org/m{n // 10}", f"l{n % 10}"
        cells = {"true_positive": 5 + n % 7, "false_positive": n % 3, "true_negative": 4,
                 "false_negative": 1 + n % 2, "unparsed": n % 4}
        data = {keys.METADATA: {keys.RUN: run}, keys.METRICS: {keys.F1: 0.5, keys.CONFUSION: cells}}
        out.append(CheckpointRecord(Path("results") / language / f"{n}.json", language, PairState.COMPLETE, data=data))
    return out
"""


def _synthetic_records(count: int):
    space: dict = {}
    exec(_SYNTHETIC, space)
    return space["synthetic_records"](count)


def test_pooled_intervals_equal_the_in_process_ones_and_leave_numpy_to_the_workers():
    """A report's process holds every record: with a pool, the bootstrap's numpy is loaded in the workers only."""
    import subprocess
    import sys

    script = (
        "import sys\n" + _SYNTHETIC +
        "from kit.results import intervals\n"
        "from kit.results.parallel import fork_available, usable_cores\n"
        "records = synthetic_records(intervals.POOL_AT_RESULTS)\n"
        "pooled = intervals.f1_intervals(records)\n"
        "assert ('numpy' in sys.modules) == (usable_cores() < 2 or not fork_available()), 'numpy loaded in the process that holds the records'\n"
        "intervals.POOL_AT_RESULTS = 10 ** 9\n"
        "assert intervals.f1_intervals(records) == pooled\n"
        "print(len(pooled.pairs), len(pooled.runs))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["500", "50"]


def test_intervals_without_numpy_name_the_extra(monkeypatch):
    import sys

    from kit.errors import MissingExtraError
    from kit.results.intervals import f1_intervals

    monkeypatch.setitem(sys.modules, "numpy", None)
    with pytest.raises(MissingExtraError, match="numpy"):
        f1_intervals(_synthetic_records(3))


def test_leaderboard_intervals_hold_the_point_estimate_and_are_stable(results, tmp_path):
    from kit.results.intervals import f1_intervals
    from kit.results.report import collect_checkpoints

    valid = [r for r in collect_checkpoints(results) if r.valid]
    first, again = f1_intervals(valid), f1_intervals(list(reversed(valid)))
    assert first == again
    for r in valid:
        low, high = first.pairs[r.name]
        assert low <= float(r.metrics[keys.F1]) <= high and low < high
    a_low, a_high = first.runs[RUNS[0]]
    assert a_low <= 0.9 <= a_high
    perfect = tmp_path / "perfect"
    checkpoint(perfect, "org/p", "en", cells=(10, 0, 10, 0, 0))
    [record] = collect_checkpoints(perfect)
    assert f1_intervals([record]).pairs[record.name] == (1.0, 1.0)
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    index = (out / INDEX).read_text(encoding="utf-8")
    assert f"[{round(a_low, 4)!r}, {round(a_high, 4)!r}]" in index


def test_every_string_from_result_files_is_escaped(results, tmp_path):
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    for page in html_files(out):
        text = page.read_text(encoding="utf-8")
        assert "<script" not in text and "<img src=x" not in text, page.name
        assert "onerror=alert(1)>" not in text.replace("&gt;", "")  # only escaped forms
    lang_page = (out / PAGES / slug("language", LANG_HOSTILE)).read_text(encoding="utf-8")
    assert html.escape(LANG_HOSTILE) in lang_page
    assert html.escape(HOSTILE) in (out / PAGES / slug("result", f"en/{RUNS[0].replace('/', '__')}.json")).read_text(
        encoding="utf-8")


def test_without_reruns_the_index_says_so_and_draws_no_agreement_plot(results, tmp_path):
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    index = (out / INDEX).read_text(encoding="utf-8")
    assert "No reruns" in index and not (out / "verdict_agreement.png").exists()


def _verdict(folder: Path, result: Path, verdict: str, agreement: float, gpu: str) -> Path:
    import hashlib

    data = {"result": str(result), "result_sha256": hashlib.sha256(result.read_bytes()).hexdigest(),
            "verdict": verdict, "agreement": agreement, "metric_deltas": {"f1": -0.01},
            "tolerance": {"agreement": 0.99, "f1": 0.01}, "bounded": "F1",
            "environments": {"recorded": {"gpu": "A100", "site": "nancy", "runtime": "apptainer"},
                             "rerun": {"gpu": gpu, "site": "lyon", "runtime": "docker"}}, "note": "n"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"reproduce-{result.stem}-{result.parent.name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_reruns_beside_results_are_plotted_tabled_and_linked(results, tmp_path):
    result = checkpoint_path(results, RUNS[0], "en")
    _verdict(tmp_path / "reproduce", result, "WITHIN TOLERANCE", 0.995, "H100 " + HOSTILE)
    (tmp_path / "reproduce-bad").mkdir()
    (tmp_path / "reproduce-bad" / "reproduce-x-en.json").write_text("[" * 5000, encoding="utf-8")
    out = tmp_path / "out"
    write_report(results, out)   # default: the reproduce* folders beside RESULTS
    index = (out / INDEX).read_text(encoding="utf-8")
    assert (out / "verdict_agreement.png").read_bytes().startswith(b"\x89PNG")
    assert "verdict_agreement.png" in refs_of(out / INDEX).refs
    assert "WITHIN TOLERANCE" in index and "99.50%" in index and html.escape("H100 " + HOSTILE) in index
    assert "reproduce-x-en.json" in index and "not read" in index
    page = (out / PAGES / slug("result", f"en/{result.name}")).read_text(encoding="utf-8")
    assert "Reruns" in page and "WITHIN TOLERANCE" in page
    assert "<script" not in index + page


def test_a_rerun_is_shown_only_beside_the_very_file_it_reran_and_only_as_its_figures_say(results, tmp_path):
    """A verdict of a result rewritten since (or borrowed from another tree), one that says REPRODUCED with
    items that differ, one without the result's digest: listed as not shown, never as this result's rerun;
    a folder given twice, or a copy of a verdict in another folder, is one rerun."""
    import shutil

    result, other = checkpoint_path(results, RUNS[0], "en"), checkpoint_path(results, RUNS[1], "en")
    kept = _verdict(tmp_path / "reproduce", result, "WITHIN TOLERANCE", 0.995, "H100")
    (tmp_path / "reproduce-copy").mkdir()
    shutil.copy(kept, tmp_path / "reproduce-copy" / kept.name)   # a copy of a verdict already read
    moved = _verdict(tmp_path / "reproduce-b", other, "REPRODUCED", 1.0, "A100")
    other.write_text(other.read_text(encoding="utf-8") + "\n", encoding="utf-8")   # rewritten since the rerun
    lying = _verdict(tmp_path / "reproduce-c", result, "REPRODUCED", 0.1, "A100")
    bare = tmp_path / "reproduce-d" / kept.name
    bare.parent.mkdir()
    bare.write_text(json.dumps({k: v for k, v in json.loads(kept.read_text()).items() if k != "result_sha256"}
                               | {"agreement": 0.996}), encoding="utf-8")
    out = tmp_path / "out"
    write_report(results, out, verdicts=[tmp_path / "reproduce", tmp_path / "reproduce", tmp_path / "reproduce-copy",
                                         tmp_path / "reproduce-b", tmp_path / "reproduce-c", tmp_path / "reproduce-d"])
    index = (out / INDEX).read_text(encoding="utf-8")
    assert index.count("99.50%") == 1 and "99.60%" not in index, index
    for name, why in ((moved.name, "reran another version of"), (lying.name, "with an agreement of 10.00%"),
                      (bare.name, "names no result_sha256")):
        assert name in index and html.escape(why) in index, (name, why)


def test_a_valid_mllog_is_a_pass(results, tmp_path):
    pytest.importorskip("mlperf_logging")
    from kit.results.check import check_pair
    from kit.worker.mllog import PairLog

    path = checkpoint_path(results, RUNS[0], "en")
    data = json.loads(path.read_text(encoding="utf-8"))
    with PairLog(mllog_path(path)) as log:
        c = log.constants
        log.event(c.SUBMISSION_BENCHMARK, "kit_lrb")
        log.event("kit_pair", {"run": RUNS[0], "language": "en", "task": "generate"})
        log.start(c.INIT_START)
        log.event("provenance", data[keys.PROVENANCE])
        log.end(c.INIT_STOP, metadata={"load_seconds": 1.0})
        log.start(c.RUN_START)
        log.event("batch_done", 0, metadata={"batch_size": 20, "seconds": 0.5})
        log.event(c.EVAL_ACCURACY, data[keys.METRICS][keys.ACCURACY], metadata={"f1": data[keys.METRICS][keys.F1],
                                                                          "n_items": 20})
        log.end(c.RUN_STOP, metadata={"status": "success", "checkpoint": path.name,
                                      "checkpoint_sha256": hashlib.sha256(dumps_checkpoint(data).encode()).hexdigest()})
    findings = check_pair(path, data)
    assert findings == [], [f.line() for f in findings]
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    page = (out / PAGES / slug("result", f"en/{path.name}")).read_text(encoding="utf-8")
    assert '<span class="pass">PASS</span>' in page
    path.write_text(path.read_text(encoding="utf-8").replace('"notes"', '"notez"'), encoding="utf-8")
    assert [f.rule for f in check_pair(path, data)] == ["log_matches_checkpoint"]


def test_legacy_file_without_provenance_says_so(tmp_path):
    results = tmp_path / "results"
    checkpoint(results, "org/legacy", "en", cells=(5, 0, 5, 0, 0), prov=False)
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    page = (out / PAGES / slug("result", "en/org__legacy.json")).read_text(encoding="utf-8")
    assert "None recorded" in page


def test_invalid_files_are_listed_on_the_index_without_a_page(results, tmp_path):
    broken = checkpoint(results, "org/model-c", "fr", cells=(5, 0, 5, 0, 0))
    broken.write_bytes(broken.read_bytes()[:100])
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    index = (out / INDEX).read_text(encoding="utf-8")
    assert "Files not counted (1)" in index and "fr/org__model-c.json" in index
    assert not (out / PAGES / slug("result", "fr/org__model-c.json")).exists()


def _suite_checkpoint(results: Path, run: str, task: str, em: list[float]) -> Path:
    from kit.results.kinds.lighteval.metrics import suite_metrics

    preds = [{keys.ITEM_ID: f"q{i}", keys.EXPECTED: "4", keys.RAW_OUTPUT: HOSTILE, keys.TRUNCATED: False,
              keys.ITEM_METRICS: {"em": v}} for i, v in enumerate(em)]
    meta = {keys.RUN: run, keys.MODEL_ID: run, keys.LANGUAGE: task, keys.TASK: "generate", "benchmark_kind": "lighteval",
            keys.DECODING: "greedy", keys.MAX_NEW_TOKENS: 16, keys.MANIFEST_SHA256: "a" * 64,
            keys.BENCHMARK_SHA256: "b" * 64, keys.PROMPT_SHA256: "c" * 64, "lighteval_task": HOSTILE}
    return write_job_checkpoint(checkpoint_path(results, run, task),
                                {keys.METADATA: meta, keys.METRICS: suite_metrics(preds), keys.PREDICTIONS: preds})


def test_a_lighteval_suite_gets_a_score_index_and_result_pages(tmp_path):
    results = tmp_path / "results"
    _suite_checkpoint(results, "org/a", "arith", [1.0, 0.0, 1.0, 1.0])
    _suite_checkpoint(results, "org/b", "arith", [0.0, 0.0, 1.0, 1.0])
    out = tmp_path / "out"
    outcome = write_report(results, out, verdicts=[])
    index = outcome.files["html"].read_text(encoding="utf-8")
    assert "LightEval" in index and "0.75" in index and "0.5" in index and "<script" not in index
    for run in ("org__a", "org__b"):
        page = out / PAGES / slug("result", f"arith/{run}.json")
        assert page.is_file() and "kit reproduce" in page.read_text(encoding="utf-8")
    for page in html_files(out):
        for ref in refs_of(page).refs:
            assert (page.parent / unquote(urlsplit(ref).path)).is_file(), (page.name, ref)


def test_kit_report_prints_the_html_index(results, tmp_path, monkeypatch):
    from kit.cli.main import cli

    monkeypatch.chdir(tmp_path)   # no roster.toml here
    out = tmp_path / "out"
    runner = CliRunner()
    r = runner.invoke(cli, ["report", str(results), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)["data"]
    assert data["html_index"] == str(out / INDEX) and data["files"]["html"] == str(out / INDEX)
    r = runner.invoke(cli, ["report", str(results), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert f"HTML report: {out / INDEX}" in r.stdout


def test_a_report_written_again_drops_the_pages_of_results_it_no_longer_counts(results, tmp_path):
    out = tmp_path / "out"
    write_report(results, out, verdicts=[])
    gone = out / PAGES / slug("result", "en/org__model-a.json")
    assert gone.is_file()
    checkpoint_path(results, RUNS[0], "en").unlink()
    write_report(results, out, verdicts=[])
    assert not gone.exists() and len(html_files(out)) == 1 + len(LANGS) + len(RUNS) * len(LANGS) - 1 + len(RUNS) - 1


def test_bootstrap_f1_is_the_metrics_f1_bit_for_bit():
    """intervals.f1_of_cells evaluates lrb's F1 over arrays; on every cell combination of up to 12
    items it is exactly compute_metrics' F1 (zero denominators included)."""
    import itertools

    import numpy as np

    from kit.results.intervals import f1_of_cells

    combos = [c for n in range(13) for c in itertools.product(range(n + 1), repeat=4) if sum(c) <= n]
    combos += [(137, 41, 96, 23), (299, 1, 0, 0), (1, 298, 0, 1)]
    cells = np.array([(tp, fp, tn, fn, 0) for tp, fp, tn, fn in combos])
    got = f1_of_cells(np, cells)
    for (tp, fp, tn, fn), value in zip(combos, got.tolist()):
        pairs = [("yes", "yes")] * tp + [("no", "yes")] * fp + [("no", "no")] * tn + [("yes", "no")] * fn
        assert value == compute_metrics(predictions_of(pairs))[keys.F1], (tp, fp, tn, fn)


def test_sections_on_demand_are_built_when_asked_and_only_for_their_names():
    built = []
    sections = OnDemand(["en/b.json", "fr/a.json"], lambda name: built.append(name) or f"<p>{name}</p>")
    assert list(sections) == ["en/b.json", "fr/a.json"] and len(sections) == 2 and built == []
    assert sections["fr/a.json"] == "<p>fr/a.json</p>" and sections.get("de/x.json", "") == ""
    with pytest.raises(KeyError):
        sections["de/x.json"]
    assert built == ["fr/a.json"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.text(max_size=8), st.sampled_from(["1.5", "-2", "1e-3", "07"]), st.integers()),
                          st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                                    st.lists(st.integers(), max_size=2))), max_size=6),
       st.one_of(st.none(), st.text(max_size=10)))
def test_key_values_is_the_table_of_its_pairs_as_code_cells(items, caption):
    """key_values writes its rows itself (a report's pages hold half a million): the very text of table()
    over (key, Cell(code(value))) rows, numeric keys right-aligned, an empty table as table() ends one."""
    from kit.results.html_page import Cell, code, key_values, table

    assert key_values(items, caption) == table(("key", "value"), [(k, Cell(code(v))) for k, v in items], caption)


@pytest.mark.parametrize("own", [None, "4"])
def test_the_bootstrap_leaves_the_blas_thread_setting_as_it_found_it(monkeypatch, own):
    """numpy is loaded for the bootstrap with one OpenBLAS thread (it multiplies no matrices), and the
    process's environment is left as the user had it."""
    import os

    from kit.results.intervals import f1_intervals

    if own is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", own)
    seen = []
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__

    def watching(name, *args, **kwargs):
        if name == "numpy":
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", watching)
    assert f1_intervals(_synthetic_records(3)).pairs
    assert seen and seen[0] == (own or "1")
    assert os.environ.get("OPENBLAS_NUM_THREADS") == own


def test_a_report_written_again_links_its_unchanged_pages_and_reads_as_one_written_afresh(results, tmp_path):
    """After one checkpoint changed, the pages that come out the same are the earlier report's files (linked,
    not written again: nothing freed when the old report goes), the changed result's page is new, and
    every file reads as a report written afresh elsewhere."""
    import filecmp
    import os

    out, fresh = tmp_path / "out", tmp_path / "fresh"
    write_report(results, out, verdicts=[])
    kept_page = out / PAGES / slug("result", "en/org__model-b@fast.json")
    changed_page = out / PAGES / slug("result", "fr/org__model-a.json")
    inodes = {p: os.stat(p).st_ino for p in (kept_page, changed_page)}
    checkpoint(results, "org/model-a", "fr", cells=(8, 2, 8, 1, 1))
    write_report(results, out, verdicts=[])
    write_report(results, fresh, verdicts=[])
    assert os.stat(kept_page).st_ino == inodes[kept_page]
    assert os.stat(changed_page).st_ino != inodes[changed_page]
    names = sorted(p.name for p in (out / PAGES).iterdir())
    assert names == sorted(p.name for p in (fresh / PAGES).iterdir())
    assert filecmp.cmpfiles(out / PAGES, fresh / PAGES, names, shallow=False)[0] == names
    assert (out / INDEX).read_bytes() == (fresh / INDEX).read_bytes()


def test_a_run_name_near_the_file_name_limit_is_reported_and_refused_only_where_a_sibling_cannot_exist(tmp_path):
    """A checkpoint whose name fits but whose signed statement's name (<stem>.intoto.jsonl) would not is
    reported (unsigned: nothing can stand there) instead of failing the report as a full disk; kit sign
    refuses it, saying why."""
    from conftest_checkpoints import make_checkpoint

    from kit.results.sign import sign_tree
    from kit.signing import init_key, load_signing_key

    run = "org/" + "m" * 240
    path = make_checkpoint(tmp_path / "results", run, "en", predictions_of([("yes", "yes"), ("no", "no")]))
    assert len(path.name) <= 255 < len(path.stem) + len(".intoto.jsonl")
    out = tmp_path / "out"
    write_report(tmp_path / "results", out)
    page = (out / PAGES / slug("result", f"en/{path.name}")).read_text(encoding="utf-8")
    assert "Unsigned" in page
    key = load_signing_key(init_key(tmp_path / "keys"))
    done = sign_tree(tmp_path / "results", key)
    assert done.signed == [] and "more than the 200 kit makes a file name of" in done.refused[path][0]
    assert "signed statement" in done.refused[path][0]
