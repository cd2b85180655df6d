"""Planner: pairs, shards and weighted site slots."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.errors import ConfigError
from kit.plan import Pair, parse_shard, plan_pairs, shard_pairs, site_slots

runs = st.lists(st.text("abcxyz/@-.", min_size=1, max_size=6), min_size=1, max_size=5, unique=True)
langs = st.lists(st.sampled_from(["en", "fr", "ja", "de", "ceb", "zh", "sw"]), min_size=1, max_size=7, unique=True)


@given(runs, langs, st.integers(1, 12))
@settings(max_examples=200, deadline=None)
def test_shards_are_disjoint_and_complete(run_names, languages, count):
    pairs = plan_pairs((r, languages) for r in run_names)
    shards = [shard_pairs(pairs, i, count) for i in range(count)]
    flat = [p for s in shards for p in s]
    assert len(flat) == len(set(flat)) == len(pairs)
    assert set(flat) == set(pairs)


@given(runs, langs, st.integers(1, 6), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_plan_is_stable_under_input_order(run_names, languages, count, rnd):
    a = plan_pairs((r, languages) for r in run_names)
    shuffled_runs = list(run_names)
    rnd.shuffle(shuffled_runs)
    shuffled_langs = list(languages)
    rnd.shuffle(shuffled_langs)
    b = plan_pairs((r, shuffled_langs) for r in shuffled_runs)
    assert a == b
    for i in range(count):
        assert shard_pairs(a, i, count) == shard_pairs(list(reversed(b)), i, count)


def test_shard_is_index_mod_count_of_the_sorted_list():
    pairs = plan_pairs([("b/m", ["fr", "en"]), ("a/m", ["en"])])
    assert pairs == [Pair("a/m", "en"), Pair("b/m", "en"), Pair("b/m", "fr")]
    assert shard_pairs(pairs, 0, 2) == [Pair("a/m", "en"), Pair("b/m", "fr")]
    assert shard_pairs(pairs, 1, 2) == [Pair("b/m", "en")]


def test_weighted_site_slots_are_consecutive_in_config_order():
    slots, total = site_slots([("nancy", 2), ("grenoble", 1)])
    assert slots == {"nancy": [0, 1], "grenoble": [2]}
    assert total == 3
    slots, total = site_slots([("lille", 1), ("nancy", 3), ("lyon", 2)])
    assert slots == {"lille": [0], "nancy": [1, 2, 3], "lyon": [4, 5]}
    assert total == 6


@pytest.mark.parametrize("text", ["4/4", "-1/2", "1", "a/b", "0/0", "", "\u0663/\u0664", "\uff11/\uff14"])   # (other scripts' digits: not OAR's or Slurm's)
def test_bad_shard_text_is_a_config_error(text):
    with pytest.raises(ConfigError):
        parse_shard(text)


def test_parse_shard():
    assert parse_shard(" 3 / 8 ") == (3, 8)


def test_languages_no_selected_run_covers_are_refused_naming_them(tmp_path):
    """`--languages de` for runs that list only en and fr plans nothing: said as an error (plan, run,
    status and cancel share select_pairs), never as "nothing to submit, everything is done"."""
    from kit.config.project import load_project
    from kit.demo.dataset import write_demo_benchmark
    from kit.plan import select_pairs

    data = write_demo_benchmark(tmp_path / "data")
    roster = tmp_path / "roster.toml"
    roster.write_text(f'benchmark = "{data.as_posix()}"\n[[run]]\nmodel = "org/m"\nrevision = "{"a" * 40}"\n'
                      'backend = "transformers-5.17"\nlanguages = ["en", "fr"]\n', encoding="utf-8")
    project = load_project(roster, None)
    with pytest.raises(ConfigError, match="none of the selected runs covers de: they run en, fr"):
        select_pairs(project.roster.run, project.benchmark, ["de"])
    assert [p.language for p in select_pairs(project.roster.run, project.benchmark, ["de", "en"])] == ["en"]


def test_plan_names_each_prompt_file_and_one_found_by_name_but_passed_over(tmp_path):
    """lrb's folder holds prompt.txt and prompt_generate.txt: plan says which one a generative run reads."""
    import json

    from inprocess import kit_in_process
    from release_helpers import demo_sweep

    sweep = demo_sweep(tmp_path)
    (sweep.bench / "benchmark.toml").unlink()   # the prompts found by lrb's file names
    text = (sweep.bench / "prompt_generate.txt").read_text(encoding="utf-8")
    (sweep.bench / "prompt.txt").write_text(text.replace("Answer", "Reply"), encoding="utf-8")
    r = kit_in_process("plan", "--allow-unpinned", cwd=sweep.root)
    assert r.returncode == 0, r.stderr
    prompt_line = next(line for line in r.stdout.splitlines() if line.startswith("prompt "))
    assert f"{sweep.bench / 'prompt.txt'} sha256 " in prompt_line
    assert "prompt_generate.txt is there too and not read: prompt.txt is the generative prompt" in r.stdout
    data = json.loads(kit_in_process("plan", "--allow-unpinned", "--json", cwd=sweep.root).stdout)["data"]
    assert set(data["prompt_files"].values()) == {str(sweep.bench / "prompt.txt")}
    assert len(data["prompts_unread"]) == 1
