"""The demo LightEval suite: twelve arithmetic questions as a LightEval custom task, written
byte-identically with its pins, in the shape of Open-R1's math evaluation (a generative task
scored by exact match and by LightEval's math-verify extractive match).

Open-R1's own tasks (math_500, aime24, aime25, gpqa:diamond, lcb) read Hub datasets that cannot
be downloaded here; this suite is what kit's tests and `kit demo`-style runs use instead.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SUITE = "kit-arith"
TASK = "kit_arith"
LIGHTEVAL_TASK = f"custom|{TASK}|0"

_PAIRS = ((2, 3), (4, 5), (10, 7), (6, 6), (9, 1), (3, 8), (12, 30), (7, 7), (15, 4), (21, 21), (8, 0), (5, 13))

TASKS_PY = '''"""kit's demo LightEval task: one-line arithmetic questions, answer after "Answer:".

LightEval loads this module itself (custom tasks, TASKS_TABLE). The data sits beside it, in
data/kit_arith/test.jsonl, one {"id", "question", "answer"} object per line.
"""

from pathlib import Path

from lighteval.metrics.metrics import Metrics
from lighteval.tasks.lighteval_task import LightevalTaskConfig
from lighteval.tasks.requests import Doc


def arith_prompt(line, task_name=None):
    """One question as a LightEval Doc whose only choice is the gold answer."""
    return Doc(task_name=task_name, query=f"{line['question']}\\nAnswer:", choices=[line["answer"]], gold_index=0)


TASKS_TABLE = [
    LightevalTaskConfig(
        name="kit_arith",
        prompt_function=arith_prompt,
        hf_repo=str(Path(__file__).resolve().parent / "data" / "kit_arith"),
        hf_subset="default",
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        generation_size=16,
        metrics=[Metrics.exact_match, Metrics.expr_gold_metric],
        stop_sequence=[],
        version=0,
    )
]
'''


def _data_text() -> str:
    lines = [json.dumps({"id": f"arith-{n:03d}", "question": f"What is {a} + {b}?", "answer": str(a + b)},
                        sort_keys=True) for n, (a, b) in enumerate(_PAIRS)]
    return "\n".join(lines) + "\n"


def suite_toml(tasks_sha256: str, data_sha256: str, temperature: float = 0.0, top_p: float = 1.0) -> str:
    """benchmark.toml of the demo suite, with the given pins."""
    return (
        "# kit's demo LightEval suite (written by kit.demo.evalsuite). Schema: kit/config/kinds/lighteval/suite.py\n"
        'kind = "lighteval"\n'
        f'name = "{SUITE}"\n'
        'custom_tasks = "tasks.py"\n'
        f'custom_tasks_sha256 = "{tasks_sha256}"\n\n'
        "[generation]\n"
        f"temperature = {temperature}\n"
        f"top_p = {top_p}\n\n"
        "[[task]]\n"
        f'name = "{TASK}"\n'
        f'lighteval = "{LIGHTEVAL_TASK}"\n'
        'data = "data/kit_arith/test.jsonl"\n'
        f'sha256 = "{data_sha256}"\n'
    )


def write_demo_suite(folder: Path) -> Path:
    """Write the demo suite into `folder` (created); returns the folder."""
    folder = Path(folder)
    data = folder / "data" / TASK / "test.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    data_text = _data_text()
    data.write_text(data_text, encoding="utf-8")
    (folder / "tasks.py").write_text(TASKS_PY, encoding="utf-8")
    sha = lambda text: hashlib.sha256(text.encode("utf-8")).hexdigest()  # noqa: E731
    (folder / "benchmark.toml").write_text(suite_toml(sha(TASKS_PY), sha(data_text)), encoding="utf-8")
    return folder
