"""Job names as `squeue` and `oarstat` show them: the run with its @variant, the size kept when a long
name is shortened, several runs said in words (not `+N`, which reads as one of lrb's `+variant`
run names), and the plan digest last (what owned_pairs reads back)."""

from __future__ import annotations

import re

from kit.launch.owners import SHORT_MAX, _DIGEST, job_name, run_short_name


def test_the_variant_stays_in_the_name():
    assert run_short_name("Qwen/Qwen3-32B@hf") == "Qwen3-32B@hf"
    assert run_short_name("Qwen/Qwen3-32B@vllm") != run_short_name("Qwen/Qwen3-32B@hf")
    assert run_short_name("LiquidAI/LFM2.5-1.2B-Instruct+DSpark") == "LFM2.5-1.2B-Instruct+DSpark"


def test_three_sizes_of_one_family_get_three_names_each_with_its_size():
    sizes = ("1.5B", "14B", "32B", "70B")
    names = {s: run_short_name(f"deepseek-ai/DeepSeek-R1-Distill-{'Llama' if s == '70B' else 'Qwen'}-{s}")
             for s in sizes}
    assert len(set(names.values())) == len(sizes)
    for size, name in names.items():
        assert name.endswith(f"-{size}") and len(name) <= SHORT_MAX and name.startswith("DeepSeek-R1")


def test_several_runs_are_said_in_words_and_the_digest_is_read_back():
    name = job_name("nancy", ["Qwen/Qwen3-32B@hf", "b", "c"], "0123456789ab")
    assert name == "kit-nancy-Qwen3-32B@hf-and-2-more-0123456789ab"
    assert "+" not in name and _DIGEST.search(name).group(1) == "0123456789ab"
    assert job_name("g5k", ["org/m"], "ffffffffffff") == "kit-g5k-m-ffffffffffff"


def test_a_hostile_run_name_cannot_reach_the_scheduler_or_a_file_name():
    name = job_name("lyon", ["evil/$(rm -rf ~); x\n'y/../z"], "0123456789ab")
    assert re.fullmatch(r"[A-Za-z0-9._@+-]+", name) and "/" not in name and not name.startswith("-")
