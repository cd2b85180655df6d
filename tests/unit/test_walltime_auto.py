"""`kit run --walltime auto` (issue 15): pair costs predicted from what earlier checkpoints measured,
shards packed longest first, the fewest that fit the site's walltime and the OAR day window, the
walltime sized to the longest shard, a calibration job for a run never measured, and the packed
shards written in the plan file that the worker and the owner check read."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest_checkpoints import current_checkpoint, rewrite
from kit.config.project import load_project
from kit.config.sites import Site
from kit.costs import PairTime, fewest_shards, job_walltime, pack, predict, shard_loads, walltime_margin
from kit.demo.dataset import write_demo_benchmark
from kit.errors import ConfigError
from kit.launch.autowall import site_cap
from kit.plan import Pair, PlanFile, plan_text, read_plan_file
from sites import plan_kit_run

PARIS = ZoneInfo("Europe/Paris")
REV = "0123456789abcdef0123456789abcdef01234567"


def test_a_language_measured_for_the_run_is_taken_as_it_is():
    p = predict([Pair("a", "en")], [PairTime("a", "en", 300.0, 20.0), PairTime("a", "fr", 100.0)])
    assert p.seconds == {Pair("a", "en"): 300.0} and p.load_seconds == {"a": 20.0} and not p.unmeasured


def test_an_unmeasured_language_costs_the_runs_median_times_what_it_costs_other_runs():
    history = [PairTime("a", "en", 100.0), PairTime("a", "fr", 100.0), PairTime("a", "th", 400.0),
               PairTime("b", "en", 10.0), PairTime("b", "fr", 10.0)]
    p = predict([Pair("b", "th"), Pair("b", "xx"), Pair("c", "en")], history)
    assert p.seconds[Pair("b", "th")] == pytest.approx(40.0)     # th is 4x a's median: 4 x b's median
    assert p.seconds[Pair("b", "xx")] == 10.0                     # nobody measured xx: b's slowest
    assert p.unmeasured == [Pair("c", "en")]


@pytest.mark.parametrize("damaged", [1e308, float("inf"), float("nan"), 400 * 24 * 3600.0])
def test_an_absurd_recorded_time_is_unknown_and_packing_survives_it(damaged):
    history = [PairTime("a", "en", 100.0, damaged), PairTime("a", "fr", damaged),
               PairTime("b", "en", damaged, 1e308)]
    p = predict([Pair("a", "en"), Pair("a", "fr"), Pair("b", "en")], history)
    assert p.seconds == {Pair("a", "en"): 100.0, Pair("a", "fr"): 100.0} and p.unmeasured == [Pair("b", "en")]
    assert p.load_seconds == {"a": 0.0}
    count, shards = fewest_shards(p.seconds, 3600, p.load_seconds)
    assert count == 1 and job_walltime(shards, p.seconds, p.load_seconds) == 900


def test_packing_puts_the_longest_first_on_the_least_loaded_shard():
    costs = {Pair("r", lang): c for lang, c in zip("abcdefg", (7, 6, 5, 4, 3, 2, 1))}
    shards = pack(costs, 3)
    assert shard_loads(shards, costs) == [10, 9, 9]
    index = [sorted(costs)[i::3] for i in range(3)]              # kit's index shards of the same pairs
    assert max(shard_loads(index, costs)) == 12


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=7), st.integers(1, 4))
def test_packing_holds_every_pair_once_within_four_thirds_of_the_best(costs_list, count):
    costs = {Pair("r", f"l{i:02d}"): float(c) for i, c in enumerate(costs_list)}
    shards = pack(costs, count)
    assert sorted(p for s in shards for p in s) == sorted(costs) and len(shards) == count
    best = min(max(sum(c for c, k in zip(costs_list, assign) if k == shard) for shard in range(count))
               for assign in itertools.product(range(count), repeat=len(costs_list)))
    assert max(shard_loads(shards, costs)) <= best * 4 / 3 + 1e-6     # Graham's bound for LPT


def test_the_fewest_shards_that_fit_the_cap_and_a_walltime_that_holds_the_longest():
    costs = {Pair("r", f"l{i:02d}"): 600.0 for i in range(20)}       # 20 pairs of 10 min
    count, shards = fewest_shards(costs, 3600, {"r": 60.0})
    assert count == 5 and [len(s) for s in shards] == [4] * 5
    assert job_walltime(shards, costs, {"r": 60.0}) == 3300           # 300 + 60 + 2400 x (1.15 + 0.15/2) = 3300
    assert fewest_shards(costs, 3600, {"r": 60.0}, most=3)[0] == 3   # --array caps the count
    one = {Pair("r", "en"): 60.0}
    assert job_walltime([list(one)], one) == 900                      # never under 15 min
    assert walltime_margin(1) == pytest.approx(1.3) and walltime_margin(100) == pytest.approx(1.165)


def test_a_runs_pairs_stay_together_when_its_model_load_is_dear():
    costs = {Pair(run, lang): 100.0 for run in ("a", "b") for lang in ("de", "en", "fr", "it")}
    apart = pack(costs, 2, {"a": 600.0, "b": 600.0})
    assert [{p.run for p in shard} for shard in apart] == [{"a"}, {"b"}]
    assert shard_loads(apart, costs, {"a": 600.0, "b": 600.0}) == [1000.0, 1000.0]
    mixed = pack(costs, 2)                                            # no load time: any split of 4 + 4
    assert shard_loads(mixed, costs) == [400.0, 400.0]


def test_an_oar_day_job_is_capped_at_the_next_boundary_and_a_night_job_is_not():
    day = Site(name="nancy", scheduler="oar", walltime="4:00", job_types=())   # OAR sites default to night
    tuesday_1730 = datetime(2026, 12, 1, 17, 30, tzinfo=PARIS)
    assert site_cap(day, tuesday_1730) == 90 * 60
    assert site_cap(day.model_copy(update={"job_types": ("night",)}), tuesday_1730) == 4 * 3600
    assert site_cap(Site(name="s", scheduler="slurm", walltime="4:00:00"), tuesday_1730) == 4 * 3600


def test_a_plan_file_keeps_its_packed_shards_and_refuses_a_wrong_count(tmp_path):
    pairs = [Pair("r", "a"), Pair("r", "b"), Pair("r", "c")]
    path = tmp_path / "plan.json"
    path.write_text(plan_text(pairs, [[pairs[2]], [pairs[0], pairs[1]]]))
    plan = read_plan_file(path)
    assert plan.shard(0, 2) == [pairs[2]] and plan.shard(1, 2) == pairs[:2]
    with pytest.raises(ConfigError, match="packs 2 shards, not 3"):
        plan.shard(0, 3)
    assert PlanFile(pairs).shard(1, 2) == [pairs[1]]                   # unpacked: by index
    body = json.loads(path.read_text())
    body["shards"] = [[["r", "a"]], [["r", "a"], ["r", "b"]]]
    path.write_text(json.dumps(body))
    with pytest.raises(ConfigError, match="exactly once"):
        read_plan_file(path)
    body["kit_plan_version"] = 99   # a plan of another kit: refused, never read as no pairs
    path.write_text(json.dumps({**body, "shards": None}))
    with pytest.raises(ConfigError, match="kit_plan_version 99; this kit reads version 1"):
        read_plan_file(path)


@pytest.fixture
def sweep(tmp_path: Path):
    write_demo_benchmark(tmp_path / "data")
    runs = "".join(f'\n[[run]]\nmodel = "org/{name}"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n'
                   for name in ("measured-1B", "new-1B"))
    (tmp_path / "roster.toml").write_text(f'benchmark = "data"\n{runs}')
    (tmp_path / "sites.toml").write_text('[site.box]\nscheduler = "slurm"\nwalltime = "1:00:00"\nweight = 3\n')
    project = load_project(tmp_path / "roster.toml", None)
    run = project.roster.run[0]
    ckpt = current_checkpoint(tmp_path / "results", run, "en", project.benchmark)
    rewrite(ckpt, lambda d: d.__setitem__("speed", {"duration_seconds": 900.0, "load_seconds": 30.0}))
    return tmp_path, project


def test_auto_packs_a_measured_run_and_calibrates_a_new_one(sweep):
    root, _ = sweep
    plan = plan_kit_run(root, ["box"], walltime="auto", resubmit=True).plan
    assert plan.held == [Pair("org/new-1B", "en"), Pair("org/new-1B", "fr")]
    calibration, packed = plan.sites
    assert calibration.pairs == [Pair("org/new-1B", "de")] and calibration.request.walltime_s == 3600
    assert "calibration" in calibration.group.note
    # de and fr of the measured run: 900 s each (its only measurement), in 1 shard they need
    # 300 + 30 + 1800 x (1.15 + 0.15 / sqrt 2) = 2591 s -> 2700 s, within the site's hour
    assert packed.pairs == [Pair("org/measured-1B", "de"), Pair("org/measured-1B", "fr")]
    assert packed.shard_count == 1 and packed.request.walltime_s == 2700 and packed.request.array_size == 1
    assert json.loads(packed.plan_text)["shards"] == [[["org/measured-1B", "de"], ["org/measured-1B", "fr"]]]
    plain = plan_kit_run(root, ["box"], resubmit=True).plan
    assert [s.request.walltime_s for s in plain.sites] == [3600] and not plain.held
    # one site without --array: one job (its weight, 3, is its share of a multi-site run)
    assert "shards" not in json.loads(plain.sites[0].plan_text) and plain.sites[0].shard_count == 1
    assert plan_kit_run(root, ["box"], resubmit=True, array=3).plan.sites[0].shard_count == 3


def test_auto_in_the_cli_says_how_each_job_was_sized(sweep, fake_oar):   # fake_oar: an idle squeue, not this machine's
    root, _ = sweep
    r = subprocess.run([sys.executable, "-m", "kit", "run", "--site", "box", "--walltime", "auto", "--dry-run"],
                       cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "# walltime auto: 2 pairs predicted at 0.50 GPU-hours from 1 measured pairs, packed into 1 shards" in r.stdout
    assert "2 pairs wait for their run's calibration job" in r.stdout and "#SBATCH --time=0:45:00" in r.stdout


def test_the_worker_runs_exactly_its_packed_shard(tmp_path):
    """`kit shard --pairs PLAN --shard 1/2` on a plan packed as [[de], [en, fr]] runs en and fr (by
    index it would run en alone), through the real worker with the engine stubbed."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "faults"))
    from test_signals_and_races import STUB, make_project

    make_project(tmp_path)
    (tmp_path / "stub").mkdir()
    pairs = [Pair("org/model-a", lang) for lang in ("de", "en", "fr")]
    (tmp_path / "plan.json").write_text(plan_text(pairs, [[pairs[0]], [pairs[1], pairs[2]]]))
    r = subprocess.run([sys.executable, str(STUB), "shard", "--roster", "roster.toml", "--results", "results",
                        "--cache-dir", "hub", "--pairs", "plan.json", "--shard", "1/2", "--json"], cwd=tmp_path,
                       env={**os.environ, "STUB_DIR": str(tmp_path / "stub")}, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert json.loads(r.stdout)["data"]["written"] == 2
    assert sorted(p.parent.name for p in (tmp_path / "results").glob("*/org__model-a.json")) == ["en", "fr"]


def test_auto_never_plans_an_empty_shard():
    from kit.launch.autowall import auto_size

    # one pair longer than the cap and two tiny ones: packing asks for more shards than it fills
    history = [PairTime("big", "en", 20000.0), PairTime("a", "en", 5.0), PairTime("b", "en", 5.0)]
    pairs = [Pair("big", "en"), Pair("a", "en"), Pair("b", "en")]
    site = Site(name="s", scheduler="slurm", walltime="1:00:00")
    plan = auto_size(pairs, history, [site], datetime(2026, 12, 1, 12, 0, tzinfo=PARIS), None)
    (group,) = plan.groups
    assert group.count == len(group.shards) and all(group.shards)
    assert sorted(p for s in group.shards for p in s) == sorted(pairs)
    assert "one pair alone is predicted longer" in group.note
