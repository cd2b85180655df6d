"""A planned pair's expectation (kit.results.identity.PlanExpectations): each pair's identity is the one
run_identity gives it, and runs that read the same of themselves (ResultKind.pair_identity_inputs: the
prompt's digest, the task) share each language's part, while a run with another prompt or task does not."""

from __future__ import annotations

import pytest

from kit.config.project import load_project
from kit.demo.dataset import LANGUAGES, write_demo_benchmark
from kit.demo.run import roster_text
from kit.plan import Pair, select_pairs
from kit.results import keys
from kit.results.identity import PlanExpectations, run_identity
from kit.results.kinds import result_kind

LLM, RERANKER = ("kit-demo/tiny-llama", "a" * 40), ("kit-demo/tiny-reranker", "b" * 40)


@pytest.fixture
def project(tmp_path):
    bench = write_demo_benchmark(tmp_path / "data")
    (bench / "my_prompt.txt").write_text("Is this sentence true? {}\nAnswer yes or no:", encoding="utf-8")
    text = roster_text(LLM, RERANKER, bench)
    # a second generate run on the default prompt, and one on a prompt of its own
    text += "\n".join(f'''
[[run]]
model = "{LLM[0]}@{name}"
revision = "{LLM[1]}"
backend = "transformers-5.17"
task = "generate"
dtype = "float32"
max_new_tokens = 8
{extra}''' for name, extra in (("again", ""), ("own-prompt", 'prompt = "my_prompt.txt"')))
    roster = tmp_path / "roster.toml"
    roster.write_text(text, encoding="utf-8")
    return load_project(roster, None)


def test_every_pair_is_held_to_its_own_identity(project):
    runs = project.roster.select(())
    plan = PlanExpectations(project.benchmark, runs)
    by_name = {r.name: r for r in runs}
    pairs = select_pairs(runs, project.benchmark, None)
    assert len(pairs) == 4 * len(LANGUAGES)
    for pair in pairs:
        expect = plan(pair)
        assert dict(expect.identity) == run_identity(by_name[pair.run], pair.language, project.benchmark)


def test_runs_that_read_the_same_of_themselves_share_a_language_part(project):
    runs = project.roster.select(())
    plan = PlanExpectations(project.benchmark, runs)
    language = LANGUAGES[0]
    first, again, own, score = (plan(Pair(name, language)) for name in
                                (LLM[0], f"{LLM[0]}@again", f"{LLM[0]}@own-prompt", RERANKER[0]))
    assert first._extra is again._extra                        # one object for the runs of one prompt and task
    assert own.identity[keys.PROMPT_SHA256] != first.identity[keys.PROMPT_SHA256]
    assert score.identity[keys.DECODING] == "score" != first.identity[keys.DECODING]
    # and what the cache keys verdicts by changes with each of them
    assert len({e.identity_key for e in (first, again, own, score)}) == 4
    other = plan(Pair(LLM[0], LANGUAGES[1]))
    assert other.identity[keys.BENCHMARK_SHA256] != first.identity[keys.BENCHMARK_SHA256]


def test_the_inputs_are_all_that_the_identity_reads_of_a_run(project):
    """Two runs with the same inputs have the same language part, computed apart (the sharing's premise)."""
    runs = {r.name: r for r in project.roster.select(())}
    kind = result_kind(project.benchmark.kind, str(project.benchmark.root))
    groups: dict = {}
    for run in runs.values():
        groups.setdefault(kind.pair_identity_inputs(run, project.benchmark), []).append(run)
    assert sorted(len(g) for g in groups.values()) == [1, 1, 2]
    for group in groups.values():
        for language in LANGUAGES:
            parts = [kind.pair_identity(run, language, project.benchmark) for run in group]
            assert all(part == parts[0] for part in parts)


@pytest.mark.parametrize("folder", ['/tmp/ca"che', "/tmp/ca\\che", "/tmp/caché d'été"])
def test_the_demo_s_files_hold_any_cache_path_as_toml_reads_it(folder):
    """KIT_CACHE_DIR may hold a quote or a backslash: the demo's roster and sites files still parse, and
    give the path back as it was (never a file kit wrote itself refused as invalid TOML)."""
    import tomllib
    from pathlib import Path

    from kit.demo.run import sites_text

    assert tomllib.loads(roster_text(LLM, RERANKER, Path(folder) / "data"))["benchmark"] == f"{folder}/data"
    assert tomllib.loads(sites_text(Path(folder) / "hub"))["site"]["local"]["weights"] == f"{folder}/hub"
