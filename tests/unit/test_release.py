"""`kit release` (the release folder lrb publishes) and `kit publish` up to the Hub client call."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest_checkpoints import seal
from inprocess import kit_in_process
from release_helpers import demo_sweep

from kit.demo.dataset import demo_prompt
from kit.results import publish as publish_mod


def run_kit(*args: str, cwd: Path | None = None) -> SimpleNamespace:
    """Run kit's main (its one error printer included) in `cwd`: exit code, stdout, stderr."""
    r = kit_in_process(*args, cwd=cwd or Path.cwd())
    return SimpleNamespace(exit_code=r.returncode, stdout=r.stdout, stderr=r.stderr)


@pytest.fixture
def sweep(tmp_path):
    return demo_sweep(tmp_path)


def test_release_writes_lrb_layout_card_items_status(sweep):
    out = sweep.root / "release"
    r = run_kit("release", "results", "-o", "release", "--json", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    env = json.loads(r.stdout)
    assert env["status"] == "ok" and env["data"]["status"] == "complete"
    for rel in ("README.md", "SNAPSHOT_STATUS.md", "leaderboard.csv", "aggregates.csv", "data/train.csv",
                "en/kit-demo__tiny-llama.json", "checkpoints/en/kit-demo__tiny-llama.json", ".kit-output.json"):
        assert (out / rel).is_file(), rel
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlicense: mit\n") and "path: data/train.csv" in card
    assert demo_prompt("generate") in card                      # verbatim
    assert "kit reproduce checkpoints/<language>/<run>.json" in card and "REPRODUCE.md" in card
    assert "| kit-demo/tiny-llama | kit-demo/tiny-llama | " + "a" * 40 in card
    assert "| kit-demo/tiny-llama | 0.0000 | 1.0000 | 1.0000 |" in card     # F1 by language: de all wrong
    status = (out / "SNAPSHOT_STATUS.md").read_text(encoding="utf-8")
    assert "Status: complete." in status and "`kit-demo/tiny-llama`: complete, 3/3 languages" in status
    rows = list(csv.DictReader((out / "data/train.csv").open(encoding="utf-8")))
    assert len(rows) == 60 and {r["language"] for r in rows} == {"de", "en", "fr"}
    assert all(r["correct"] == ("false" if r["language"] == "de" else "true") for r in rows)
    assert set(env["data"]["files"]) >= {"README.md", "data/train.csv"} and ".kit-output.json" not in env["data"]["files"]


def test_release_of_a_sweep_in_progress_says_so(sweep):
    (sweep.results / "fr" / "kit-demo__tiny-llama.json").unlink()
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    status = (sweep.root / "release" / "SNAPSHOT_STATUS.md").read_text(encoding="utf-8")
    assert "in progress; not the final release" in status and "2/3 languages; not complete: `fr` (pending)" in status
    assert "Snapshot in progress" in (sweep.root / "release" / "README.md").read_text(encoding="utf-8")


def test_invalid_checkpoint_stops_the_release_and_writes_nothing(sweep):
    path = sweep.results / "en" / "kit-demo__tiny-llama.json"
    path.write_text(path.read_text()[:50])
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 1 and str(Path("results/en/kit-demo__tiny-llama.json")) in r.stderr and "fix:" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in sweep.root.iterdir()) == ["data", "results", "roster.toml"]
    # under --json the same finding: failed (as verify's FAIL), exit 1, the line in errors
    r = run_kit("release", "results", "-o", "release", "--json", cwd=sweep.root)
    body = json.loads(r.stdout)
    assert r.exit_code == 1 and body["status"] == "failed" and body["errors"] == [r.stderr.strip()[len("kit: error: "):]]


@pytest.mark.parametrize("name", ["kit-demo__tiny-llama.json", "kit-demo__tiny-llama.mllog"])
def test_a_linked_checkpoint_or_log_stops_the_release_and_writes_nothing(sweep, name):
    secret = sweep.root / "secret.txt"
    path = sweep.results / "en" / name
    if path.exists():
        secret.write_bytes(path.read_bytes())
        path.unlink()
    else:
        secret.write_text("private key\n")
    path.symlink_to(secret)
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    # a linked log is no evidence (kit.results.evidence); a linked checkpoint is refused by the release itself
    why = "not a regular file" if name.endswith(".mllog") else "symlink:"
    # an invalid checkpoint (a finding) exits 1, a linked one the release refuses to copy is bad input
    assert r.exit_code == (1 if name.endswith(".mllog") else 2) and why in r.stderr and name in r.stderr \
        and "fix:" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in sweep.root.iterdir()) == ["data", "results", "roster.toml", "secret.txt"]


def test_a_checkpoint_changed_since_its_job_logged_it_stops_the_release(sweep):
    from kit.files import file_sha256

    path = sweep.results / "en" / "kit-demo__tiny-llama.json"
    log = ':::MLLOG {"key": "run_stop", "metadata": {"checkpoint_sha256": "%s"}}\n' % file_sha256(path)
    path.with_suffix(".mllog").write_text(log, encoding="utf-8")   # what the job logs of its file
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=1), encoding="utf-8")
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 2 and "changed after the job wrote it" in r.stderr and path.name in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (sweep.root / "release").exists()


def test_a_value_lrb_s_json_cannot_hold_stops_the_release_in_one_line(sweep):
    path = sweep.results / "fr" / "kit-demo__tiny-llama.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["predictions"][2]["latency_seconds"] = float("nan")   # a counter lrb's files carry; kit's reader allows NaN
    path.write_text(json.dumps(data), encoding="utf-8")
    seal(path)   # as its job wrote and logged it: the value, not an edit, is what stops the release
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 2 and "predictions[2].latency_seconds" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (sweep.root / "release").exists() and not list(sweep.root.glob(".release.tmp-*"))


def test_release_refuses_an_existing_folder_unless_it_is_a_release(sweep):
    (sweep.root / "mine").mkdir()
    (sweep.root / "mine" / "notes.txt").write_text("keep")
    for extra in ([], ["--force"]):
        r = run_kit("release", "results", "-o", "mine", *extra, cwd=sweep.root)
        assert r.exit_code == 2 and "mine" in r.stderr
    assert (sweep.root / "mine" / "notes.txt").read_text() == "keep"
    assert run_kit("release", "results", "-o", "rel", cwd=sweep.root).exit_code == 0
    assert run_kit("release", "results", "-o", "rel", cwd=sweep.root).exit_code == 2
    assert run_kit("release", "results", "-o", "rel", "--force", cwd=sweep.root).exit_code == 0


def test_release_needs_the_prompts(sweep):
    sweep.roster.rename(sweep.root / "elsewhere.toml")
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 2 and "--benchmark" in r.stderr
    r = run_kit("release", "results", "-o", "release", "--benchmark", "data", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    assert "every run found times every language found" in (sweep.root / "release/SNAPSHOT_STATUS.md").read_text()


@pytest.fixture
def release(sweep):
    assert run_kit("release", "results", "-o", "release", cwd=sweep.root).exit_code == 0
    rel = sweep.root / "release"
    (rel / ".superseded").mkdir()
    (rel / ".superseded" / "old.json").write_text("{}")
    (rel / "en" / ".kit-demo__tiny-llama.claim").write_text("")
    (rel / "leftover.tmp").write_text("")
    return rel


def test_publish_dry_run_lists_exactly_the_release_files(release):
    r = run_kit("publish", "me/lrb", str(release), "--dry-run", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert "README.md" in data["files"] and "data/train.csv" in data["files"]
    assert not any(f.startswith(".") or "/." in f or f.endswith(".tmp") for f in data["files"])
    assert set(data["skipped"]) == {".kit-output.json", ".superseded/old.json", "en/.kit-demo__tiny-llama.claim",
                                    "leftover.tmp"}


@pytest.mark.parametrize("name,text", [(".netrc", "machine huggingface.co password x"), ("hf_token", "x"),
                                       ("notes.md", "token: hf_" + "A1b2" * 9)])
def test_publish_refuses_what_looks_like_a_secret(release, name, text):
    (release / name).write_text(text)
    r = run_kit("publish", "me/lrb", str(release), "--dry-run")
    assert r.exit_code == 2 and name in r.stderr and "fix:" in r.stderr


def test_publish_sends_the_listed_files_in_one_dataset_commit(release, monkeypatch):
    calls = []

    class FakeApi:
        def create_repo(self, **kw):
            calls.append(("create_repo", kw))

        def create_commit(self, **kw):
            calls.append(("create_commit", kw))
            return type("Info", (), {"commit_url": "https://hub.example/datasets/me/lrb/commit/1"})()

    monkeypatch.setattr(publish_mod, "default_api", lambda token_file=None, endpoint=None: FakeApi())
    r = run_kit("publish", "me/lrb", str(release), "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    (name, create), (name2, commit) = calls
    assert name == "create_repo" and create == {"repo_id": "me/lrb", "repo_type": "dataset", "private": False,
                                                "exist_ok": True}
    assert name2 == "create_commit" and commit["repo_type"] == "dataset"
    sent = [op.path_in_repo for op in commit["operations"]]
    assert sent == list(data["files"]) and data["commit_url"].endswith("/commit/1")
    assert all(Path(op.path_or_fileobj).read_bytes() == (release / op.path_in_repo).read_bytes()
               for op in commit["operations"])


@pytest.mark.parametrize("args", [["not-a-repo", "release", "--dry-run"], ["me/lrb", "missing", "--dry-run"]])
def test_publish_bad_input_is_one_line_exit_2(release, args):
    r = run_kit("publish", *args, cwd=release.parent)
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1


def test_publish_uploads_to_a_hub_server(release, monkeypatch):
    """The real HfApi against tests/hubserver.py: one dataset commit holding exactly the listed files."""
    from hubserver import HubServer, go_online

    go_online(monkeypatch)
    hub = HubServer({})
    endpoint = hub.start()
    try:
        token = release.parent / "token-file"
        token.write_text("hf_test")
        token.chmod(0o600)
        r = run_kit("publish", "me/lrb", str(release), "--endpoint", endpoint, "--token-file", str(token), "--json")
    finally:
        hub.stop()
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert [c["repo_id"] for c in hub.created] == ["me/lrb"] and hub.created[0]["type"] == "dataset"
    (commit,) = hub.commits
    assert commit.repo_id == "me/lrb" and commit.repo_type == "dataset"
    assert sorted(commit.files) == sorted(data["files"])
    assert all(commit.files[rel] == (release / rel).read_bytes() for rel in commit.files)
    assert data["commit_url"].startswith(endpoint)


@pytest.mark.parametrize("offline", [True, False], ids=["HF_HUB_OFFLINE", "nothing listening"])
def test_a_hub_that_cannot_be_reached_is_one_line_not_a_traceback(release, monkeypatch, offline):
    """The real HfApi, offline or pointed at a port nothing listens on: one line naming where and what to
    check, exit 2 offline (a setting) or 1 (an upload step failed), no traceback."""
    from hubserver import unreachable_hub

    endpoint = unreachable_hub(monkeypatch, offline)
    token = release.parent / "token-file"
    token.write_text("hf_test")
    token.chmod(0o600)
    r = run_kit("publish", "me/lrb", str(release), "--endpoint", endpoint, "--token-file", str(token))
    # offline mode is a setting to change (exit 2); a Hub that does not answer, an upload step that failed
    assert r.exit_code == (2 if offline else 1) and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    said = "needs the Hub at" if offline else "failed at"
    assert line.startswith(f"kit: error: publishing me/lrb {said} {endpoint}") and "HF_HUB_OFFLINE" in line


def test_an_lrb_file_comes_into_the_release_as_lrb_wrote_it_in_its_place(sweep):
    """A release of a tree holding lrb's own single-language files: the top level's comes into the release
    byte for byte at its place, as `kit export lrb` writes it, never under an invented language; a batch
    folder's copy is a collection of its own (as kit report's batches/), left out and named, never a second
    copy of the pair in the card; kit's checkpoints are converted as before."""
    import hashlib

    import lrb_schema as lrb

    prompt = hashlib.sha256(demo_prompt("generate").encode("utf-8")).hexdigest()
    made = []
    bench = sweep.project.benchmark   # lrb's files measured on this benchmark's English data
    answers = bench.expected_answers("en")
    for folder in ("", "strict-8-tokens"):
        preds = [lrb.prediction(i, answers[i], answers[i], answers[i]) for i in bench.item_ids("en")]
        data = lrb.result("org/lrb-model", None, preds, prompt_sha256=prompt, max_new_tokens=8,
                          benchmark_sha256=bench.pinned_sha256("en"))
        path = sweep.results / folder / lrb.file_name(data)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        made.append(path)
    sweep.roster.rename(sweep.root / "roster-aside.toml")   # a roster plans its own runs only: lrb's run is none
    r = run_kit("release", "results", "-o", "release", "--benchmark", "data", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    out = sweep.root / "release"
    top, batch = made
    assert (out / top.relative_to(sweep.results)).read_bytes() == top.read_bytes()
    assert not (out / "strict-8-tokens").exists()
    assert f"left out (lrb's batch folder strict-8-tokens, a collection of its own: release it on its own): " \
           f"{Path('results') / 'strict-8-tokens' / batch.name}" in r.stdout, r.stdout
    assert not (out / "und").exists() and (out / "en" / "kit-demo__tiny-llama.json").is_file()
    card = (out / "README.md").read_text(encoding="utf-8")   # lrb's files name their run by model_id
    runs = [line for line in card.splitlines() if line.startswith("Runs: ")]
    assert any("`org/lrb-model`" in line for line in runs) and not any("`  `" in line for line in runs), runs


def test_a_release_holds_one_checkpoint_document_at_a_time(tmp_path, monkeypatch):
    """Each checkpoint is read, used and let go before the next (a 20,000-pair release held whole needs GBs)."""
    import weakref

    from release_helpers import LLM, RERANKER

    sweep = demo_sweep(tmp_path, runs=(LLM, RERANKER))   # 6 checkpoints

    from kit.results import release as release_mod

    class Document(dict):
        __hash__ = object.__hash__   # by identity: a WeakSet member

    alive: "weakref.WeakSet[Document]" = weakref.WeakSet()
    most: list[int] = []
    real = release_mod._read

    def tracked(path):
        doc = Document(real(path))
        alive.add(doc)
        most.append(len(alive))
        return doc

    monkeypatch.setattr(release_mod, "_read", tracked)
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    # read twice (checked, then written); at most the one being read and the one before it are alive
    assert len(most) == 2 * 6 and max(most) <= 2
    rows = list(csv.DictReader((sweep.root / "release" / "data/train.csv").open(encoding="utf-8")))
    assert len(rows) == 6 * 20 and [(r["run"], r["language"]) for r in rows] == sorted((r["run"], r["language"]) for r in rows)


def test_every_changed_checkpoint_is_counted_in_the_one_line_that_stops_a_release(sweep):
    from kit.files import file_sha256

    for lang in ("de", "en"):
        path = sweep.results / lang / "kit-demo__tiny-llama.json"
        path.with_suffix(".mllog").write_text(
            ':::MLLOG {"key": "run_stop", "metadata": {"checkpoint_sha256": "%s"}}\n' % file_sha256(path), encoding="utf-8")
        path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=1), encoding="utf-8")
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 2 and "de/kit-demo__tiny-llama.json" in r.stderr and "and 1 more" in r.stderr
    assert not (sweep.root / "release").exists()


def test_a_results_folder_whose_name_is_not_utf8_is_read_reported_and_released(sweep):
    """Linux allows any bytes in a folder name: the cache keys it by its bytes, the report's memo digests
    it, and a page shows its escape, instead of a traceback."""
    import os

    results = os.fsdecode(os.fsencode(sweep.root) + b"/res\xffults")
    os.rename(sweep.results, results)
    for args in (("status", results), ("status", results), ("verify", results), ("report", results, "-o", "rep"),
                 ("release", results, "-o", "rel")):
        r = run_kit(*args, cwd=sweep.root)
        assert r.exit_code == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    page = (sweep.root / "rep" / "index.html").read_bytes()
    page.decode("utf-8")   # valid UTF-8 throughout
    assert (sweep.root / "rel" / "README.md").is_file()


@pytest.mark.slow   # two releases: 1.9 s
def test_a_release_written_again_links_the_files_that_come_out_the_same(sweep):
    """After one checkpoint changed, `kit release --force` links in the earlier release's files that come
    out byte for byte the same (the other language's lrb file, checkpoint copy, log and result page keep
    their inodes), writes the changed pair's files anew, and reads as a release written afresh."""
    import filecmp
    import os

    from conftest_checkpoints import current_checkpoint
    from release_helpers import flip

    from kit.files import regular_files
    from kit.results.html_page import PAGES, slug

    assert run_kit("release", "results", "-o", "release", cwd=sweep.root).exit_code == 0
    out = sweep.root / "release"
    name = "kit-demo__tiny-llama"
    pages = {lang: [f"{lang}/{name}.json", f"checkpoints/{lang}/{name}.json", f"checkpoints/{lang}/{name}.mllog",
                    f"{PAGES}/{slug('result', f'{lang}/{name}.json')}"] for lang in ("en", "fr")}
    assert all((out / rel).is_file() for found in pages.values() for rel in found), pages
    before = {rel: os.stat(out / rel).st_ino for found in pages.values() for rel in found}
    run = sweep.project.roster.run[0]
    current_checkpoint(sweep.results, run, "fr", sweep.project.benchmark, predicted=flip)
    r = run_kit("release", "results", "-o", "release", "--force", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    assert run_kit("release", "results", "-o", "fresh", cwd=sweep.root).exit_code == 0
    assert all(os.stat(out / rel).st_ino == before[rel] for rel in pages["en"])
    for rel in (f"fr/{name}.json", f"checkpoints/fr/{name}.json", f"{PAGES}/{slug('result', f'fr/{name}.json')}"):
        assert os.stat(out / rel).st_ino != before[rel], rel
    names = regular_files(out)
    assert names == regular_files(sweep.root / "fresh")
    assert filecmp.cmpfiles(out, sweep.root / "fresh", names, shallow=False)[0] == names


@pytest.mark.parametrize("license_id", ["mit\npretty_name: \"pwned\"\n---\n<script>alert(1)</script>", "", "a b",
                                        "mit # x", "-rf"])
def test_a_licence_that_is_not_one_id_is_refused_before_the_card(sweep, license_id):
    r = run_kit("release", "results", "-o", "release", "--license", license_id, cwd=sweep.root)
    assert r.exit_code == 2 and "is not a licence id" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (sweep.root / "release").exists()


def test_the_card_s_front_matter_reads_back_as_written_whatever_the_name(sweep):
    """--name goes into the YAML front matter with every character past ASCII escaped: C1 controls, U+0085
    and the line separators (which YAML refuses or folds) come back as they were."""
    import yaml   # mlperf-logging's own dependency

    name = "a\u0080b\u2028c\u0085d \u202e\"quoted\" --- é"
    r = run_kit("release", "results", "-o", "release", "--name", name, "--license", "cc-by-4.0", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    card = (sweep.root / "release" / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("\n---\n")[0].removeprefix("---\n"))
    assert front["pretty_name"] == name and front["license"] == "cc-by-4.0"


def test_the_card_names_each_prompt_s_runs_as_every_command_names_them(sweep):
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    card = (sweep.root / "release" / "README.md").read_text(encoding="utf-8")
    assert "Runs: `kit-demo/tiny-llama`" in card, card


def test_a_release_holds_every_file_to_the_benchmark_and_leaves_out_pairs_the_roster_does_not_plan(sweep):
    """A copy of English results relabelled as a language the benchmark lacks stops the release (it is
    invalid, as verify says); a pair of a run the roster does not plan is left out and named, never
    counted against the planned pairs."""
    import shutil

    src = sweep.results / "en" / "kit-demo__tiny-llama.json"
    (sweep.results / "it").mkdir()
    relabelled = sweep.results / "it" / src.name
    relabelled.write_text(src.read_text(encoding="utf-8").replace('"language": "en"', '"language": "it"'),
                          encoding="utf-8")
    seal(relabelled)
    r = run_kit("release", "results", "-o", "release", cwd=sweep.root)
    assert r.exit_code == 1 and "kit-demo__tiny-llama.json: invalid checkpoint" in r.stderr, r.stderr
    assert "'it' is not one of the benchmark's" in r.stderr, r.stderr
    assert not (sweep.root / "release").exists()
    shutil.rmtree(sweep.results / "it")
    other = sweep.results / "en" / "other-org__model.json"
    other.write_text(src.read_text(encoding="utf-8").replace("kit-demo/tiny-llama", "other-org/model"),
                     encoding="utf-8")
    seal(other)
    r = run_kit("release", "results", "-o", "release", "--json", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert list(data["outside_the_plan"]) == [str(Path("results") / "en" / other.name)]
    assert not (sweep.root / "release" / "en" / other.name).exists()
    status = (sweep.root / "release" / "SNAPSHOT_STATUS.md").read_text(encoding="utf-8")
    assert "other-org/model" not in status and "3 of 3" in status


def test_check_and_collect_narrowed_by_model_or_language_leave_the_rest_out_and_find_no_fault_in_it(tmp_path):
    """--model and --languages narrow what check checks and what collect takes: the planned pairs they
    leave out are neither faults nor merged; a file of a pair no roster run plans still is one."""
    from release_helpers import LLM, RERANKER

    sweep = demo_sweep(tmp_path, (LLM, RERANKER))
    for narrowed in (("--model", LLM[0]), ("--languages", "de")):
        r = run_kit("check", "results", *narrowed, cwd=sweep.root)   # (the sweep's logs are no MLLOG runs)
        assert "ok    pairs_complete" in r.stdout and "pair outside the plan" not in r.stdout, r.stdout + r.stderr
        assert "ok    checkpoints_valid" in r.stdout, r.stdout
    r = run_kit("collect", "--from", "a=results", "--languages", "en", "-o", "merged", "--json", cwd=sweep.root)
    assert r.exit_code == 0, r.stdout + r.stderr
    merged = sorted(p.relative_to(sweep.root / "merged").as_posix() for p in (sweep.root / "merged").glob("*/*.json"))
    assert merged and all(name.startswith("en/") for name in merged), merged
    stray = sweep.results / "en" / "other-org__model.json"
    stray.write_text((sweep.results / "en" / "kit-demo__tiny-llama.json").read_text(encoding="utf-8")
                     .replace("kit-demo/tiny-llama", "other-org/model"), encoding="utf-8")
    seal(stray)
    r = run_kit("check", "results", "--model", LLM[0], cwd=sweep.root)
    assert r.exit_code == 1 and "other-org__model.json: -: checkpoint of a pair outside the plan" in r.stdout, r.stdout


def test_a_pair_copied_into_a_batch_folder_is_released_once_and_deeper_files_stop_a_release(sweep):
    """A copy of a kit checkpoint in a batch folder (new-models/en/) is no second copy of the pair in the
    card, its items or checkpoints/: the tree's own file is the one released; a file deeper than any
    checkpoint lies stops the release, as it stops kit collect."""
    import shutil

    own = sweep.results / "en" / "kit-demo__tiny-llama.json"
    (sweep.results / "new-models" / "en").mkdir(parents=True)
    for suffix in (".json", ".mllog"):
        shutil.copy(own.with_suffix(suffix), sweep.results / "new-models" / "en" / own.with_suffix(suffix).name)
    r = run_kit("release", "results", "-o", "release", "--json", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert list(data["in_batches"].values()) == ["new-models"]
    assert (sweep.root / "release" / "checkpoints" / "en" / own.name).read_bytes() == own.read_bytes()
    rows = list(csv.DictReader((sweep.root / "release" / "data" / "train.csv").open(encoding="utf-8")))
    counts = {lang: sum(1 for row in rows if row["language"] == lang) for lang in {row["language"] for row in rows}}
    assert len(set(counts.values())) == 1, counts   # en not twice
    (sweep.results / "en" / "old").mkdir()
    shutil.copy(own, sweep.results / "en" / "old" / own.name)
    r = run_kit("release", "results", "-o", "release2", cwd=sweep.root)
    assert r.exit_code == 2 and "lies deeper than a checkpoint lies" in r.stderr and not (sweep.root / "release2").exists()


def test_a_language_only_a_batch_folder_holds_is_no_pending_pair_of_the_release(sweep):
    """Without a roster a release plans every run found times every language found, in the tree's own
    files: a language a batch folder alone holds is not a pair the release waits for."""
    own = sweep.results / "de" / "kit-demo__tiny-llama.json"
    (sweep.results / "new-models" / "de").mkdir(parents=True)
    for suffix in (".json", ".mllog"):
        own.with_suffix(suffix).rename(sweep.results / "new-models" / "de" / own.with_suffix(suffix).name)
    sweep.roster.rename(sweep.root / "roster-aside.toml")
    r = run_kit("release", "results", "-o", "release", "--benchmark", "data", "--json", cwd=sweep.root)
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert data["status"] == "complete", data["coverage"]
    assert list(data["in_batches"].values()) == ["new-models"]
    assert not (sweep.root / "release" / "batches").exists()   # no leaderboard of what it does not hold
