"""`kit demo` end to end, and the worker's determinism, on the tiny local models."""

from __future__ import annotations

import json

import pytest
from e2e_helpers import kit

from kit.demo.run import DEMO_VERSION
from kit.results.store import iter_checkpoint_files

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_demo_runs_every_pair_and_writes_the_report(first_demo, demo_env):
    root, _ = demo_env
    out = first_demo.stdout
    assert "2 runs x 3 languages (de, en, fr) = 6 pairs" in out
    assert "status: 6 complete" in out
    results = root / "kit-demo" / "results"
    ckpts = iter_checkpoint_files(results)
    assert len(ckpts) == 6
    systems = list((results / "systems").glob("*.json"))
    assert len(systems) == 1
    system = json.loads(systems[0].read_text())
    assert system["job"]["site"] == "local" and system["software"]["torch"] and system["host_processor_core_count"]
    for name in ("leaderboard.csv", "aggregates.csv", "summary.md", "heatmap_f1.png"):
        assert (results / "report" / name).is_file(), name
    data = json.loads(ckpts[0].read_text())
    prov = data["provenance"]
    assert prov["model"]["revision"] and len(prov["model"]["revision"]) == 40
    assert prov["model"]["weight_files_sha256"]
    assert prov["job"]["site"] == "local" and prov["job"]["scheduler"] == "local" and prov["job"]["job_id"]
    assert prov["data"]["file_sha256"] == data["metadata"]["benchmark_sha256"]
    assert prov["packages"]["torch"] and prov["packages"]["transformers"]
    assert prov["unknown"]["image.digest"].startswith("host runtime")
    log = ckpts[0].with_suffix(".mllog").read_text().splitlines()
    keys = [json.loads(line.split(":::MLLOG ", 1)[1])["key"] for line in log if ":::MLLOG" in line]
    for k in ("init_start", "init_stop", "run_start", "eval_accuracy", "run_stop"):
        assert k in keys, k


def test_second_demo_skips_every_pair_and_keeps_files(first_demo, demo_env):
    root, env = demo_env
    results = root / "kit-demo" / "results"
    before = {p: p.read_bytes() for p in iter_checkpoint_files(results)}
    r = kit("demo", cwd=root, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every pair is already complete" in r.stdout
    assert {p: p.read_bytes() for p in iter_checkpoint_files(results)} == before


def test_verify_accepts_demo_checkpoints_and_status_counts_them(first_demo, demo_env):
    root, env = demo_env
    demo = root / "kit-demo"
    r = kit("verify", str(demo / "results"), cwd=demo, env=env)
    assert r.returncode == 0, r.stdout
    r = kit("status", "results", "--json", cwd=demo, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["data"]["counts"] == {"complete": 6}


def test_worker_is_deterministic_and_keeps_invalid_files(first_demo, demo_env):
    root, env = demo_env
    env = {**env, "HF_HUB_CACHE": str(root / "cache" / f"demo-{DEMO_VERSION}" / "hub")}
    demo = root / "kit-demo"
    for name in ("again1", "again2"):
        r = kit("shard", "--results", name, "--model", "kit-demo/tiny-llama", "--languages", "en", cwd=demo, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    a = json.loads((demo / "again1/en/kit-demo__tiny-llama.json").read_text())
    b = json.loads((demo / "again2/en/kit-demo__tiny-llama.json").read_text())
    assert json.dumps(a["predictions"]) == json.dumps(b["predictions"])
    orig = json.loads((demo / "results/en/kit-demo__tiny-llama.json").read_text())
    assert a["predictions"] == orig["predictions"]
    # an invalid checkpoint is reported and kept unless --force
    path = demo / "again1/en/kit-demo__tiny-llama.json"
    path.write_text(path.read_text()[:100])
    r = kit("shard", "--results", "again1", "--model", "kit-demo/tiny-llama", "--languages", "en", cwd=demo, env=env)
    assert r.returncode == 1 and "invalid" in r.stderr
    assert len(path.read_text()) == 100
    r = kit("shard", "--results", "again1", "--model", "kit-demo/tiny-llama", "--languages", "en", "--force",
            cwd=demo, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(path.read_text())["predictions"] == a["predictions"]


def test_a_job_signs_what_it_wrote_when_it_can_reach_a_key(first_demo, demo_env, tmp_path):
    """kit shard (the host runtime's worker) with KIT_SIGNING_KEY_PATH: each pair signed "by the job that
    wrote it", verified against the key's public half; without the variable, unsigned and said so; a
    key others can read leaves the pair written and unsigned, saying why."""
    import base64
    import os

    root, env = demo_env
    env = {**env, "HF_HUB_CACHE": str(root / "cache" / f"demo-{DEMO_VERSION}" / "hub"), "KIT_KEYS_DIR": str(tmp_path)}
    demo = root / "kit-demo"
    assert kit("keys", "init", cwd=demo, env=env).returncode == 0
    (tmp_path / "pub.json").write_text(kit("keys", "export", cwd=demo, env=env).stdout)
    args = ("shard", "--model", "kit-demo/tiny-llama", "--languages", "en")
    r = kit(*args, "--results", "signed", cwd=demo, env={**env, "KIT_SIGNING_KEY_PATH": str(tmp_path / "ed25519.pem")})
    assert r.returncode == 0 and "signed by the job with key" in r.stdout + r.stderr, r.stdout + r.stderr
    envelope = json.loads((demo / "signed/en/kit-demo__tiny-llama.intoto.jsonl").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["predicate"]["signing"]["signed"] == "by the job that wrote it"
    provenance = json.loads((demo / "signed/en/kit-demo__tiny-llama.json").read_text())["provenance"]
    assert statement["predicate"]["provenance"] == provenance and provenance["model"]["revision"]
    r = kit("verify", "signed", "--trusted-keys", str(tmp_path / "pub.json"), cwd=demo, env=env)
    assert r.returncode == 0 and "signed by the job that wrote it" in r.stdout, r.stdout
    r = kit(*args, "--results", "unsigned", cwd=demo, env=env)
    assert r.returncode == 0 and "unsigned (KIT_SIGNING_KEY_PATH not set" in r.stdout + r.stderr
    assert not (demo / "unsigned/en/kit-demo__tiny-llama.intoto.jsonl").exists()
    os.chmod(tmp_path / "ed25519.pem", 0o644)
    r = kit(*args, "--results", "loose", cwd=demo, env={**env, "KIT_SIGNING_KEY_PATH": str(tmp_path / "ed25519.pem")})
    assert r.returncode == 0 and "unsigned (" in r.stdout + r.stderr and "chmod 600" in r.stdout + r.stderr
    assert (demo / "loose/en/kit-demo__tiny-llama.json").is_file()


def test_readme_release_block_runs_on_the_demo(first_demo, demo_env):
    """README's "Release and publish" commands, as written, after `kit demo` (the fast tier skips them)."""
    import re
    import shlex
    from pathlib import Path

    root, env = demo_env
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Release and publish.*?```bash\n(.*?)```", readme, re.S).group(1)
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["kit", "demo"], ["kit", "release"], ["kit", "publish"]]
    for argv in commands[1:]:
        r = kit(*argv[1:], cwd=root, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    release = root / "kit-demo" / "release"
    assert "Status: complete." in (release / "SNAPSHOT_STATUS.md").read_text()
    assert "would upload" in r.stdout and "README.md" in r.stdout
    card = (release / "README.md").read_text()
    assert "| kit-demo/tiny-llama |" in card and "0.0000 | 0.0000 | 0.0000" not in card   # real scores


def test_readme_compare_block_runs_on_the_demo(first_demo, demo_env):
    """README's "Compare two runs" command, as written, after `kit demo`: both demo runs compared on
    the demo's three languages, with an interval and a p-value for each."""
    import re
    import shlex
    from pathlib import Path

    root, env = demo_env
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Compare two runs.*?```bash\n(.*?)```", readme, re.S).group(1)
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["kit", "demo"], ["kit", "compare"]]
    r = kit(*commands[1][1:], cwd=root, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "macro" in r.stdout and "method:" in r.stdout and "page: kit-demo/compare.html" in r.stdout
    page = (root / "kit-demo" / "compare.html").read_text(encoding="utf-8")
    assert "Flipped items" in page and "Method:" in page
    data = json.loads(kit(*commands[1][1:], "--json", cwd=root, env=env).stdout)["data"]
    assert len(data["languages"]) == 3 and data["not_compared"] == {}
    for lang in data["languages"]:
        assert lang["f1"]["low"] <= lang["f1"]["diff"] <= lang["f1"]["high"] and 0 <= lang["p_holm"] <= 1
    assert data["flips"] and all(flip["sentence"] for flip in data["flips"])   # the roster's benchmark read
    board = (root / "kit-demo" / "results" / "report" / "index.html").read_text(encoding="utf-8")
    assert "vs next" in board and ("≈</a>" in board or "≠</a>" in board)


def test_readme_signed_results_block_runs_on_a_copy_of_the_demo(first_demo, demo_env, tmp_path):
    """README's "Signed results" block, as written, on a copy of `kit demo`'s results: every result signed
    and verified against the published key; one rewritten consistently afterwards then fails."""
    import re
    import shlex
    import shutil
    from pathlib import Path

    from kit.results.metrics import compute_metrics

    root, env = demo_env
    shutil.copytree(root / "kit-demo", tmp_path / "kit-demo", ignore=shutil.ignore_patterns("release", "report"))
    env = {**env, "KIT_KEYS_DIR": str(tmp_path / "keys")}
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Signed results.*?```bash\n(.*?)```", readme, re.S).group(1)
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert [shlex.split(line)[:2] for line in lines] == [["kit", "keys"], ["kit", "sign"], ["kit", "keys"],
                                                         ["kit", "verify"]]
    for line in lines:
        argv, out = shlex.split(line.split(">")[0]), line.split(">")[1].strip() if ">" in line else None
        r = kit(*argv[1:], cwd=tmp_path, env=env)
        assert r.returncode == 0, (line, r.stdout, r.stderr)
        if out:
            (tmp_path / out).write_text(r.stdout, encoding="utf-8")
    assert "6 verified, 0 failed" in r.stdout and "signed after the fact" in r.stdout
    checkpoint = iter_checkpoint_files(tmp_path / "kit-demo" / "results")[0]
    data = json.loads(checkpoint.read_text(encoding="utf-8"))
    for item in data["predictions"]:   # every answer made right, consistently: what unsigned checks accept
        item.update({"predicted": item["expected"], "raw_output": item["expected"], "parse_mode": "exact",
                     "truncated": False})
    data["metrics"] = compute_metrics(data["predictions"])
    checkpoint.write_text(json.dumps(data, sort_keys=True, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert kit("verify", str(checkpoint), cwd=tmp_path, env=env).returncode == 0   # unsigned checks accept it
    r = kit(*shlex.split(lines[-1])[1:], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "(the file changed after it was signed)" in r.stdout, r.stdout


def test_readme_drift_block_runs_on_a_copy_of_the_demo(first_demo, demo_env, tmp_path):
    """README's "Drift between setups" block, as written, on a copy of `kit demo`'s workspace: every demo
    result rerun in bfloat16 on the host for real, the setups this machine cannot run named with their fix,
    and the report's drift table (drift.csv, the index's section, a page per rerun) built from the verdicts."""
    import csv
    import re
    import shlex
    import shutil
    from pathlib import Path

    root, env = demo_env
    shutil.copytree(root / "kit-demo", tmp_path / "kit-demo", ignore=shutil.ignore_patterns("release", "report", "reproduce*"))
    env = {k: v for k, v in env.items() if k != "KIT_IMAGES_LOCK"}   # no engine image here: named, not run
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Drift between setups.*?```bash\n(.*?)```", readme, re.S).group(1)
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]
    assert [c[:2] for c in commands] == [["kit", "demo"], ["kit", "reproduce"]]
    r = kit(*commands[0][1:], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "drift: llama.cpp not measured here:" in r.stdout and "drift: vLLM not measured here:" in r.stdout
    assert "drift    6 reruns in" in r.stdout, r.stdout
    r = kit(*commands[1][1:], cwd=tmp_path, env=env)
    assert r.returncode == 0 and "deliberate rerun" in r.stdout and "F1 change" in r.stdout, r.stdout + r.stderr
    verdict = json.loads((tmp_path / "kit-demo" / "reproduce-drift" /
                          "reproduce-kit-demo__tiny-llama-fr-as-bfloat16.json").read_text(encoding="utf-8"))
    assert verdict["deliberate"] == {"dtype": "bfloat16"}
    assert verdict["setups"]["recorded"]["dtype"] == "float32" and verdict["setups"]["rerun"]["dtype"] == "bfloat16"
    paired = verdict["paired"]
    assert paired["items"] == 20 and paired["f1"]["low"] <= paired["f1"]["diff"] <= paired["f1"]["high"]
    assert paired["changed"] == sum(d["recorded"] != d["rerun"] for d in verdict["differing_items"])
    report = tmp_path / "kit-demo" / "results" / "report"
    rows = list(csv.DictReader((report / "drift.csv").open(encoding="utf-8")))
    assert len(rows) == 6 and {r["language"] for r in rows} == {"de", "en", "fr"}
    assert all("float32" in r["recorded_setup"] and "bfloat16" in r["rerun_setup"] for r in rows)
    index = (report / "index.html").read_text(encoding="utf-8")
    assert "Drift between setups" in index and 'src="drift.png"' in index
    pages = sorted((report / "pages").glob("rerun-*.html"))
    assert len(pages) == 6 and all(f'href="pages/{p.name}"' in index for p in pages)
