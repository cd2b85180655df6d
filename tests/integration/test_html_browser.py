"""kit report's HTML report in a real browser (Debian's chromium, headless): every page of a report
copied to another folder loads from file:// with every image decoded and every link pointing at a
file of the copy, no console message, no script or event handler from the hostile strings in the
results, and a screenshot of the index that shows content (not one flat colour)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from conftest_checkpoints import write_job_checkpoint  # noqa: E402

from kit.results import keys  # noqa: E402
from kit.results.metrics import compute_metrics  # noqa: E402
from kit.results.report import write_report  # noqa: E402
from kit.results.store import checkpoint_path  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>&\"'"
RUNS = {"org/model-a": (9, 1, 8, 1, 1), "org/<b>model-b</b>": (5, 5, 5, 5, 0)}
LANGS = ("en", "fr", 'x"><img src=y onerror=alert(2)>')

# The harness loads every report page in an iframe (file:// pages may read each other with
# --allow-file-access-from-files), then writes what it found into its own DOM for --dump-dom.
HARNESS = """<!DOCTYPE html><html><body><pre id="out">pending</pre><script>
const pages = %s;
const found = [];
let pending = pages.length;
for (const p of pages) {
  const f = document.createElement("iframe");
  f.src = p;
  f.onload = () => {
    const d = f.contentDocument;
    found.push(d === null ? {page: p, unreadable: true} : {page: p, title: d.title,
      images: [...d.images].map(i => [i.getAttribute("src"), i.complete && i.naturalWidth > 0]),
      links: [...d.links].map(a => a.href), scripts: d.scripts.length,
      handlers: [...d.querySelectorAll("*")].filter(e => [...e.attributes].some(a => a.name.startsWith("on"))).length,
      text: d.body ? d.body.innerText.length : 0});
    if (--pending === 0) document.getElementById("out").textContent = JSON.stringify(found);
  };
  document.body.appendChild(f);
}
</script></body></html>
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium; installed here as root on Debian (as scripts/dev/packages.sh does in CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.geteuid() == 0 and Path("/etc/debian_version").is_file():
        r = subprocess.run(["bash", "-c", ". scripts/dev/lib.sh && need_pkgs chromium fonts-dejavu-core"], cwd=REPO,
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            pytest.fail(f"installing chromium failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
        found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is not installed (scripts/dev/packages.sh installs it, as root on Debian)")
    return found


def _browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=180)


def _checkpoint(results: Path, run: str, language: str, cells: tuple[int, ...], backend: str = "transformers-5.17") -> None:
    tp, fp, tn, fn, unparsed = cells
    pairs = ([("yes", "yes")] * tp + [("yes", "no")] * fn + [("yes", "unparsed")] * unparsed
             + [("no", "yes")] * fp + [("no", "no")] * tn)
    # the hostile text in every answer, which still reads as its verdict (verify re-reads short answers)
    preds = [{keys.ITEM_ID: f"i{n:03d}", keys.EXPECTED: e, keys.PREDICTED: p,
              keys.RAW_OUTPUT: HOSTILE if p == "unparsed" else f"{p} {HOSTILE}",
              keys.TRUNCATED: False, keys.PARSE_MODE: "none" if p == "unparsed" else "leading"}
             for n, (e, p) in enumerate(pairs)]
    meta = {keys.MODEL_ID: run, keys.RUN: run, keys.LANGUAGE: language, keys.MODEL_REVISION: "1" * 40,
            keys.BACKEND: "transformers-5.17", keys.TASK: "generate", keys.DECODING: "greedy", keys.MAX_NEW_TOKENS: 64,
            keys.MANIFEST_SHA256: "a" * 64, keys.BENCHMARK_SHA256: "c" * 64, keys.PROMPT_SHA256: "b" * 64}
    prov = {"image": {"digest": "sha256:" + "d" * 64, "artifact": "sif", "artifact_sha256": "e" * 64,
                      "lock_sha256": "f" * 64, "backend": backend}, "packages": {"torch": HOSTILE},
            "model": {"id": run, "revision": "1" * 40}, "hardware": {"gpu_name": HOSTILE},
            "job": {"site": "nancy", "job_id": HOSTILE, "runtime": "apptainer"},
            "data": {"manifest_sha256": "a" * 64, "file_sha256": "c" * 64, "prompt_sha256": "b" * 64}}
    write_job_checkpoint(checkpoint_path(results, run, language), {   # with the log its job writes
        keys.METADATA: meta, keys.METRICS: compute_metrics(preds), keys.PREDICTIONS: preds, keys.PROVENANCE: prov})


@pytest.fixture
def copied_report(tmp_path: Path) -> Path:
    """A report with reruns, made in one folder and copied to another: the copy's index."""
    pytest.importorskip("matplotlib")
    results = tmp_path / "sweep" / "results"
    for run, cells in RUNS.items():
        for lang in LANGS:
            _checkpoint(results, run, lang, cells)
    _checkpoint(results, "org/model-c", "en", (5, 0, 5, 0, 0), backend=HOSTILE)   # invalid: its reason is hostile
    verdicts = tmp_path / "sweep" / "reproduce"
    verdicts.mkdir()
    result = checkpoint_path(results, "org/model-a", "en")
    (verdicts / "reproduce-org__model-a-en.json").write_text(json.dumps({
        # the verdict its own figures give (0.95 is under the tolerance), tied to the very file it reran
        "result": str(result), "result_sha256": hashlib.sha256(result.read_bytes()).hexdigest(),
        "verdict": "DIFFERENT", "agreement": 0.95, "tolerance": {"agreement": 0.99},
        "environments": {"recorded": {"gpu": "A100", "site": "nancy", "runtime": "apptainer"},
                         "rerun": {"gpu": HOSTILE, "site": "lyon", "runtime": "docker"}},
        # a deliberate rerun's drift figures (kit reproduce --as): the drift section, its plot and the rerun's page
        "deliberate": {"dtype": HOSTILE}, "run": "org/model-a",
        "setups": {"recorded": {"backend": "vllm", "dtype": "float32", "gpu": "A100"},
                   "rerun": {"backend": "vllm", "dtype": "bfloat16", "gpu": HOSTILE}},
        "paired": {"items": 20, "changed": 1, "p_value": 1.0,
                   "f1": {"a": 0.8, "b": 0.85, "diff": -0.05, "low": -0.15, "high": 0.0}},
        "differing_items": [{"item_id": "item-000", "recorded": "yes", "rerun": "no", "recorded_output": "yes",
                             "rerun_output": HOSTILE}]}), encoding="utf-8")
    outcome = write_report(results, tmp_path / "sweep" / "report")
    copy = tmp_path / "elsewhere" / "report"
    shutil.copytree(outcome.files["html"].parent, copy)
    shutil.rmtree(tmp_path / "sweep")   # the copy must stand alone
    return copy / "index.html"


def test_every_page_loads_with_its_images_and_links_and_no_script(chromium, copied_report, tmp_path):
    report = copied_report.parent
    pages = sorted(p.relative_to(report.parent).as_posix() for p in report.rglob("*.html"))
    # the index, a page per language and per result, per pair of neighbouring ranks, and the rerun's
    assert len(pages) == 1 + len(LANGS) + len(RUNS) * len(LANGS) + len(RUNS) - 1 + 1
    harness = report.parent / "harness.html"
    harness.write_text(HARNESS % json.dumps(pages), encoding="utf-8")
    r = _browse(chromium, tmp_path / "profile", "--allow-file-access-from-files", "--virtual-time-budget=20000",
                "--dump-dom", harness.as_uri())
    assert r.returncode == 0, r.stderr[-3000:]
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    start, end = r.stdout.index('<pre id="out">') + len('<pre id="out">'), r.stdout.index("</pre>")
    text = r.stdout[start:end].replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    found = json.loads(text)
    assert sorted(f["page"] for f in found) == pages
    images = 0
    for page in found:
        assert not page.get("unreadable"), page
        assert page["scripts"] == 0 and page["handlers"] == 0, page["page"]   # hostile strings stayed text
        assert page["text"] > 100, page["page"]
        for src, loaded in page["images"]:
            assert loaded, (page["page"], src)
            images += 1
        for href in page["links"]:
            parts = urlsplit(href)
            assert parts.scheme == "file", (page["page"], href)
            target = Path(unquote(parts.path))
            assert target.is_file() and report in target.parents, (page["page"], href)
    assert images >= 4   # the heatmap, F1 per language, the reruns' agreement and the drift plot on the index


def test_screenshot_of_the_index_shows_content(chromium, copied_report, tmp_path):
    image = pytest.importorskip("matplotlib.image")
    np = pytest.importorskip("numpy")
    shot = tmp_path / "index.png"
    r = _browse(chromium, tmp_path / "profile", "--window-size=1280,1600", f"--screenshot={shot}", copied_report.as_uri())
    assert r.returncode == 0 and shot.is_file(), r.stderr[-3000:]
    pixels = (image.imread(shot)[:, :, :3] * 255).astype(np.uint8)
    assert pixels.shape[:2] == (1600, 1280)
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 64, len(colours)   # text, tables and plots, not a blank or flat page
    background = (pixels == pixels[0, 0]).all(axis=2).mean()
    assert background < 0.97, background      # more than a few marks on an empty page
