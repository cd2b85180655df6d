"""`kit check`: the compliance checker of a results tree, MLPerf-style.

Rules are data (RULES) pointing at named predicates; every finding carries the rule,
the file and the key; the verdict is PASS only when no rule has a finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.dataset import Dataset
from kit.errors import ConfigError
from kit.plan import Pair
from kit.results import keys
from kit.results.checkpoint import CheckpointState, validate_checkpoint
from kit.results.compliance import check_mllog
from kit.results.kinds import kind_of
from kit.results.store import checkpoint_path, iter_checkpoint_files, mllog_path


@dataclass
class Finding:
    """One failed check: which rule, which file, which key, what is wrong."""

    rule: str
    path: str
    key: str
    message: str

    def line(self) -> str:
        """One line for the terminal."""
        return f"FAIL [{self.rule}] {self.path}: {self.key}: {self.message}"


@dataclass
class CheckInput:
    """What the rules look at."""

    results: Path
    benchmark: Dataset
    expected: list[Pair]
    image_ids: frozenset[str]   # the image ids of the lock of built images
    checkpoints: dict[Path, CheckpointState] = field(default_factory=dict)

    def complete(self) -> list[tuple[Path, dict]]:
        """The complete checkpoints and their data."""
        return [(p, st.data) for p, st in sorted(self.checkpoints.items()) if st.state == keys.COMPLETE and st.data]


def _meta(data: dict) -> dict:
    return data.get(keys.METADATA, {})


def pairs_complete(inp: CheckInput) -> list[Finding]:
    """Every planned pair has a checkpoint file; none lies outside the plan."""
    if not inp.expected:
        return [Finding("pairs_complete", str(inp.results), "-",
                        "no pair is planned (an empty selection of runs or languages): a PASS would prove nothing")]
    out = []
    expected = {checkpoint_path(inp.results, p.run, p.language): p for p in inp.expected}
    for path, pair in sorted(expected.items()):
        if path not in inp.checkpoints:
            out.append(Finding("pairs_complete", str(path), "-", f"missing checkpoint for {pair}"))
    for path in sorted(set(inp.checkpoints) - set(expected)):
        out.append(Finding("pairs_complete", str(path), "-", "checkpoint of a pair outside the plan"))
    return out


def checkpoints_valid(inp: CheckInput) -> list[Finding]:
    """Every checkpoint parses, matches its path and the benchmark's ids, and its metrics recompute exactly."""
    return [Finding("checkpoints_valid", str(p), "-", "; ".join(st.reasons))
            for p, st in sorted(inp.checkpoints.items()) if st.state != keys.COMPLETE]


def one_prompt_digest(inp: CheckInput) -> list[Finding]:
    """All pairs of one task used the same prompt, the benchmark's."""
    out = []
    for path, data in inp.complete():
        task = _meta(data).get(keys.TASK, keys.TASK_GENERATE)
        try:
            want: str | None = inp.benchmark.prompt(task).sha256
        except ConfigError:   # a task the benchmark has no prompt for
            want = None
        got = _meta(data).get(keys.PROMPT_SHA256)
        if got != want:
            out.append(Finding("one_prompt_digest", str(path), "metadata.prompt_sha256",
                               f"{str(got)[:16]} differs from the benchmark's {task} prompt {str(want)[:16]}"))
    return out


def dataset_digests(inp: CheckInput) -> list[Finding]:
    """Each checkpoint read the language file and manifest the benchmark declares."""
    out = []
    for path, data in inp.complete():
        meta = _meta(data)
        lang = meta.get(keys.LANGUAGE)
        pinned = inp.benchmark.pinned_sha256(lang)
        if pinned is None or meta.get(keys.BENCHMARK_SHA256) != pinned:
            out.append(Finding("dataset_digests", str(path), "metadata.benchmark_sha256",
                               f"{str(meta.get(keys.BENCHMARK_SHA256))[:16]} is not the manifest's digest for {lang!r}"))
        if meta.get(keys.MANIFEST_SHA256) != inp.benchmark.manifest_sha256:
            out.append(Finding("dataset_digests", str(path), "metadata.manifest_sha256",
                               "differs from the benchmark manifest's sha256"))
    return out


def images_locked(inp: CheckInput) -> list[Finding]:
    """Every image digest a result names is in the image lock (host-runtime results name none)."""
    known = inp.image_ids
    out = []
    for path, data in inp.complete():
        prov = data.get(keys.PROVENANCE, {})
        image = prov.get("image", {})
        digest = image.get("digest")
        runtime = prov.get("job", {}).get("runtime")
        if digest is None:
            if runtime not in (None, "host"):
                out.append(Finding("images_locked", str(path), "provenance.image.digest",
                                   f"runtime {runtime!r} ran without a recorded image digest"))
        elif digest not in known:
            out.append(Finding("images_locked", str(path), "provenance.image.digest",
                               f"{digest[:19]} is not in the image lock"))
    return out


def revisions_pinned(inp: CheckInput) -> list[Finding]:
    """No pair ran with an unpinned model revision."""
    from kit.config.roster import HEX40

    return [Finding("revisions_pinned", str(p), "metadata.model_revision", f"{_meta(d).get(keys.MODEL_REVISION)!r} is not a 40-hex commit")
            for p, d in inp.complete() if not HEX40.match(str(_meta(d).get(keys.MODEL_REVISION) or ""))]


def mllog_compliant(inp: CheckInput) -> list[Finding]:
    """Each pair's :::MLLOG log passes mlperf-logging's compliance checker with kit's ruleset."""
    out = []
    for path, data in inp.complete():
        kind = kind_of(data)
        if kind is None:   # not reached: a checkpoint of an unknown kind is never complete
            continue
        for problem in check_mllog(mllog_path(path), kind.ruleset):
            out.append(Finding("mllog_compliant", str(mllog_path(path)), "-", problem.split(": ", 1)[-1]))
    return out


@dataclass(frozen=True)
class Rule:
    """A named check and the predicate that implements it."""

    name: str
    description: str
    check: Callable[[CheckInput], list[Finding]]


RULES = (
    Rule("pairs_complete", "every planned pair has a checkpoint, none outside the plan", pairs_complete),
    Rule("checkpoints_valid", "checkpoints parse, match their path and ids, metrics recompute exactly", checkpoints_valid),
    Rule("one_prompt_digest", "one prompt digest per task, the benchmark's", one_prompt_digest),
    Rule("dataset_digests", "dataset file and manifest digests match the manifest", dataset_digests),
    Rule("images_locked", "every image digest appears in the image lock", images_locked),
    Rule("revisions_pinned", "no pair ran with an unpinned revision", revisions_pinned),
    Rule("mllog_compliant", "each :::MLLOG log passes mlperf-logging's checker with kit's ruleset", mllog_compliant),
)


def run_checks(results: Path, benchmark: Dataset, expected: list[Pair],
               image_ids: frozenset[str]) -> tuple[CheckInput, dict[str, list[Finding]]]:
    """Validate every checkpoint of the tree, then apply every rule; rule name -> findings."""
    inp = CheckInput(Path(results), benchmark, expected, image_ids)
    for path in iter_checkpoint_files(results):
        pair = next((p for p in expected if checkpoint_path(results, p.run, p.language) == path), None)
        ids = benchmark.item_ids(path.parent.name) if path.parent.name in benchmark.languages else None
        inp.checkpoints[path] = validate_checkpoint(path, run=pair.run if pair else None,
                                                    language=path.parent.name, item_ids=ids)
    return inp, {rule.name: rule.check(inp) for rule in RULES}

