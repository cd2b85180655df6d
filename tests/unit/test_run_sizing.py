"""`kit run` planning sizes every job per site and per engine (issue 13, item 1), grows an OAR
memory filter to the model, refuses what cannot fit before anything is submitted, and never
plans an empty shard (item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from kit.config.sites import Site
from kit.demo.dataset import write_demo_benchmark
from kit.errors import ConfigError
from kit.launch.jobsize import grown_filter, site_gpus
from sites import plan_kit_run

# `kit run` asks oarstat for your live jobs: the fake one (conftest), not an OAR this machine may have
pytestmark = pytest.mark.usefixtures("fake_oar")
REV = "0123456789abcdef0123456789abcdef01234567"
SITES = '''
[site.nancy]
scheduler = "oar"
runtime = "host"
gpus_per_node = 2
gpu_memory_gib = 80
gpu_filter = "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
weight = 2

[site.lyon]
scheduler = "oar"
runtime = "host"
job_types = ["exotic"]
night_jobs = false
gpus_per_node = 8
gpu_memory_gib = 40

[site.small]
scheduler = "slurm"
runtime = "host"
gpus_per_node = 1
gpu_memory_gib = 24
'''


def workspace(tmp_path: Path, runs: str) -> None:
    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(f'benchmark = "data"\n{runs}')
    (tmp_path / "sites.toml").write_text(SITES)


def run(model: str, backend: str, **extra: str) -> str:
    lines = "".join(f"{k} = {v}\n" for k, v in extra.items())
    return f'\n[[run]]\nmodel = "{model}"\nrevision = "{REV}"\nbackend = "{backend}"\nlanguages = ["en"]\n{lines}'


def plan(tmp_path: Path, runs: str, sites: list[str]):
    workspace(tmp_path, runs)
    return plan_kit_run(tmp_path, sites).plan


def test_each_site_gets_its_own_gpu_count_in_either_order(tmp_path):
    runs = run("org/big-70B", "vllm", options="{ attention_heads = 64, kv_heads = 8 }")
    for order in (["nancy", "lyon"], ["lyon", "nancy"]):
        with pytest.raises(ConfigError, match="site 'nancy' spans one node of gpus_per_node = 2 GPU"):
            plan(tmp_path / "-".join(order), runs, order)   # 163 GiB needs 3 of nancy's 80 GiB GPUs: it has 2
    sized = plan(tmp_path / "lyon", runs, ["lyon"])
    assert [s.gpus for s in sized.sites] == [8]   # 163 GiB over 40 GiB GPUs: 5 -> 8, the first count dividing 64 and 8


def test_a_transformers_run_gets_one_gpu_and_must_fit_on_it(tmp_path):
    sized = plan(tmp_path / "a", run("org/mid-27B", "transformers-5.17"), ["nancy"])
    assert [s.gpus for s in sized.sites] == [1]   # not nancy's 2: this engine uses one device
    with pytest.raises(ConfigError, match="40 GiB GPU of site 'lyon'.*runs on one GPU") as exc:   # 63 GiB needed
        plan(tmp_path / "b", run("org/mid-27B", "transformers-5.17"), ["nancy", "lyon"])
    assert "quantized variant" in exc.value.fix and "backend vllm" in exc.value.fix


def test_the_oar_memory_filter_grows_with_the_model(tmp_path):
    sized = plan(tmp_path, run("org/mid-27B", "transformers-5.17"), ["nancy"])
    assert "gpu_mem>=64374" in sized.sites[0].site.gpu_filter      # 27e9 x 2 bytes x 1.25, in MiB, rounded up
    assert "-p" in sized.sites[0].submit_argv and any("gpu_mem>=64374" in a for a in sized.sites[0].submit_argv)


def test_the_model_size_comes_from_the_staged_snapshot_before_its_name(tmp_path):
    hub = tmp_path / "hub" / "models--org--named-70B" / "snapshots" / REV
    hub.mkdir(parents=True)
    save_file({"w": np.zeros((1000, 1000), dtype=np.float16)}, str(hub / "model.safetensors"))
    (hub / "config.json").write_text(json.dumps({"num_attention_heads": 8, "torch_dtype": "float16"}))
    (tmp_path / "x").mkdir()
    sites = SITES.replace('[site.small]\n', f'[site.small]\nweights = "{tmp_path / "hub"}"\n')
    workspace(tmp_path / "x", run("org/named-70B", "vllm"))
    (tmp_path / "x" / "sites.toml").write_text(sites)
    sized = plan_kit_run(tmp_path / "x", ["small"]).plan
    assert [s.gpus for s in sized.sites] == [1] and not sized.warnings   # 2 MB of weights, not 70B of them


def test_an_unknown_size_is_said_not_silent(tmp_path):
    sized = plan(tmp_path, run("org/mystery", "transformers-5.17"), ["small"])
    assert [s.gpus for s in sized.sites] == [1]
    assert any("org/mystery at small" in w and "memory not checked" in w for w in sized.warnings)


def test_a_pair_is_never_planned_into_an_empty_shard(tmp_path):
    sized = plan(tmp_path, run("org/tiny-1B", "vllm"), ["nancy", "lyon"])   # 1 pair, 3 weighted slots
    assert [(s.site.name, s.slots, s.shard_count) for s in sized.sites] == [("nancy", [0], 1)]


def test_a_dry_run_as_json_keeps_every_jobs_script(tmp_path):
    workspace(tmp_path, run("org/a-1B", "vllm") + run("org/b-1B", "transformers-5.17"))
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "nancy", "--dry-run", "--json"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["data"]
    assert len(data["jobs"]) == 2 and sorted(data["scripts"]) == sorted(j["script"] for j in data["jobs"])
    assert all(text.startswith("#!/bin/bash") for text in data["scripts"].values())


def oar_site(gpu_filter: str) -> Site:
    return Site(name="lille", scheduler="oar", runtime="host", gpus_per_node=1, gpu_memory_gib=80, gpu_filter=gpu_filter)


@pytest.mark.parametrize("gpu_filter,floor,grown", [
    # a plain conjunction's one gpu_mem>=N holds for every GPU it picks: raised in place, as before
    ("gpu_compute_capability_major>=7 AND gpu_mem>=23040", 23040,
     "gpu_compute_capability_major>=7 AND gpu_mem>=76294"),
    ("gpu_mem>=23040", 23040, "gpu_mem>=76294"),
    # anything else gets the floor on the whole filter (OAR's -p is an SQL WHERE clause)
    ("gpu_mem>23040", 23041, "(gpu_mem>23040) AND gpu_mem>=76294"),
    ("cluster='chuc' OR gpu_mem>=23040", 0, "(cluster='chuc' OR gpu_mem>=23040) AND gpu_mem>=76294"),
    ("cluster='grouille'", 0, "(cluster='grouille') AND gpu_mem>=76294"),
    ("not cluster='chuc' and gpu_mem>=23040", 0, "(not cluster='chuc' and gpu_mem>=23040) AND gpu_mem>=76294"),
    ("(cluster='a' OR cluster='b') AND gpu_mem>=23040", 0,
     "((cluster='a' OR cluster='b') AND gpu_mem>=23040) AND gpu_mem>=76294"),
    # what a quoted value holds is no operator, and no floor
    ("host like 'x (or y)' AND gpu_mem>=23040", 23040, "host like 'x (or y)' AND gpu_mem>=76294"),
    ("host='gpu_mem>=99999' AND gpu_mem>=23040", 23040, "(host='gpu_mem>=99999' AND gpu_mem>=23040) AND gpu_mem>=76294"),
    # a number that is not a whole count of MiB is no floor, and is never cut short
    ("gpu_mem>=1e5", 0, "(gpu_mem>=1e5) AND gpu_mem>=76294"),
    ("gpu_mem>=4.5 AND x=1", 0, "(gpu_mem>=4.5 AND x=1) AND gpu_mem>=76294"),
    # an empty filter guarantees nothing: the job asks for its floor alone
    ("", 0, "gpu_mem>=76294"),
])
def test_the_floor_holds_for_every_gpu_the_filter_can_pick(gpu_filter, floor, grown):
    site = oar_site(gpu_filter)
    assert site_gpus(site).filter_mib == floor
    assert grown_filter(site, 76294) == grown
    assert grown_filter(site, None) == gpu_filter


@pytest.mark.parametrize("cap,limit", [("gpu_mem<=40000", 40000), ("gpu_mem<40000", 39999), ("gpu_mem=16384", 16384)])
def test_a_floor_past_the_filter_s_own_cap_is_refused_not_submitted(cap, limit):
    """Raised past a gpu_mem cap of the same conjunction, the filter would select no GPU: refused, naming both."""
    site = oar_site(f"gpu_mem>=8000 AND {cap}")
    with pytest.raises(ConfigError, match=f"gives GPUs of at most {limit} MiB, and the job needs 76294 MiB"):
        grown_filter(site, 76294)
    assert grown_filter(site, 8000) == f"gpu_mem>=8000 AND {cap}"
    assert grown_filter(oar_site("gpu_mem>=8000 AND gpu_mem<=90000"), 76294) == "gpu_mem>=76294 AND gpu_mem<=90000"


def test_an_or_filter_gets_the_floor_in_the_oarsub_line(tmp_path):
    workspace(tmp_path, run("org/mid-27B", "transformers-5.17"))
    sized = plan_kit_run(tmp_path, ["lille"], sites=[oar_site("cluster='chuc' OR gpu_mem>=23040")]).plan
    wanted = "(cluster='chuc' OR gpu_mem>=23040) AND gpu_mem>=64374"    # 27e9 x 2 bytes x 1.25, in MiB
    assert sized.sites[0].site.gpu_filter == wanted
    argv = sized.sites[0].submit_argv
    assert argv[argv.index("-p") + 1] == wanted


def test_a_filter_that_guarantees_enough_is_left_as_written(tmp_path):
    workspace(tmp_path, run("org/small-1B", "transformers-5.17"))   # 3 GiB: under 23041 MiB
    sized = plan_kit_run(tmp_path, ["lille"], sites=[oar_site("gpu_mem>23040")]).plan
    argv = sized.sites[0].submit_argv
    assert argv[argv.index("-p") + 1] == "gpu_mem>23040"
