"""`kit check`: the compliance checker of a results tree, MLPerf-style.

Rules are data (RULES) pointing at named predicates; every finding carries the rule,
the file and the key; the verdict is PASS only when no rule has a finding."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.dataset import Dataset
from kit.config.roster import Run
from kit.errors import ConfigError
from kit.files import file_sha256
from kit.plan import Pair
from kit.results import keys
from kit.results.keys import PairState
from kit.results.checkpoint import CheckpointState
from kit.results.compliance import (check_mllog, log_events, log_unreadable, metrics_unlike_logged,
                                     run_stop_checkpoint_sha256)
from kit.results.identity import PlanExpectations
from kit.results.kinds import kind_of
from kit.results.parallel import validate_many
from kit.results.store import checkpoint_path, iter_checkpoint_files, linked_part, mllog_path


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
    runs: dict[str, Run] = field(default_factory=dict)
    checkpoints: dict[Path, CheckpointState] = field(default_factory=dict)
    weights: Path | None = None   # a Hugging Face cache holding the weights manifests (kit check --weights)
    trusted_keys: list | None = None   # public keys a result must be signed by (kit check --trusted-keys)

    def complete(self) -> list[tuple[Path, dict]]:
        """The complete checkpoints and their data."""
        return [(p, st.data) for p, st in sorted(self.checkpoints.items()) if st.state == PairState.COMPLETE and st.data]


def _batch_of(results: Path, path: Path) -> str:
    """The lrb batch folder a checkpoint lies in ("" for the tree's own: kit.results.store.collection_of)."""
    from kit.results.store import collection_of

    return collection_of(results, path, path.parent.name)


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
        batch = _batch_of(inp.results, path)
        out.append(Finding("pairs_complete", str(path), "-", "checkpoint of a pair outside the plan" if not batch else
                           f"checkpoint in lrb's batch folder {batch!r}, a collection of its own and no part of the "
                           "sweep's plan (kit collect refuses it too): move the batch out of the results folder"))
    return out


def checkpoints_valid(inp: CheckInput) -> list[Finding]:
    """Every checkpoint parses, matches its path, the benchmark's ids and labels and its own
    provenance record, and its metrics recompute exactly."""
    return [Finding("checkpoints_valid", str(p), "-", "; ".join(st.reasons))
            for p, st in sorted(inp.checkpoints.items()) if st.state not in (PairState.COMPLETE, PairState.STALE)]


def checkpoints_current(inp: CheckInput) -> list[Finding]:
    """Every checkpoint was recorded for its run and data as the roster and benchmark have them now."""
    return [Finding("checkpoints_current", str(p), "metadata", "stale: " + "; ".join(st.reasons))
            for p, st in sorted(inp.checkpoints.items()) if st.state == PairState.STALE]


def log_matches_checkpoint(inp: CheckInput) -> list[Finding]:
    """The sha256 the job wrote in its log's run_stop line is the checkpoint's, and so are the metrics it
    logged (eval_accuracy): no edit since, even one that rewrote the logged digest."""
    out = []
    for path, data in inp.complete():
        link = linked_part(inp.results, path)
        if link is not None:   # a link's target is nobody's logged file
            out.append(Finding("log_matches_checkpoint", str(path), "-",
                               f"{link} is a link, not the file its job wrote (replace it with the file itself)"))
            continue
        log = mllog_path(path)
        if not log.is_file():
            continue   # mllog_compliant reports the missing log
        unreadable = log_unreadable(log)
        if unreadable:
            out.append(Finding("log_matches_checkpoint", str(log), "-", unreadable))
            continue
        events = log_events(log)
        recorded = run_stop_checkpoint_sha256(log, events)
        actual = file_sha256(path)
        if recorded is None:
            out.append(Finding("log_matches_checkpoint", str(log), "run_stop.metadata.checkpoint_sha256",
                               "the log's run_stop line records no checkpoint digest"))
        elif recorded != actual:
            out.append(Finding("log_matches_checkpoint", str(path), "-",
                               f"sha256 {actual[:16]} is not the {recorded[:16]} its job logged: "
                               "the file was changed after the job wrote it"))
        elif (unlike := metrics_unlike_logged(path, log, metrics=data.get(keys.METRICS), events=events)) is not None:
            out.append(Finding("log_matches_checkpoint", str(path), "metrics", unlike))
    return out


def one_prompt_digest(inp: CheckInput) -> list[Finding]:
    """Every pair of a run used the prompt the benchmark gives that run now (lrb's file for its kind,
    or the run's own)."""
    out = []
    planned = {checkpoint_path(inp.results, p.run, p.language): p for p in inp.expected}
    for path, data in inp.complete():
        run = inp.runs.get(planned[path].run) if path in planned else None
        if run is None:
            continue   # outside the plan: pairs_complete reports it
        try:
            want: str | None = inp.benchmark.prompt_for(run).sha256
        except ConfigError:   # a run the benchmark has no prompt for
            want = None
        got = _meta(data).get(keys.PROMPT_SHA256)
        if got != want:
            out.append(Finding("one_prompt_digest", str(path), "metadata.prompt_sha256",
                               f"{str(got)[:16]} differs from the prompt the benchmark gives {run.name} "
                               f"({str(want)[:16]})"))
    return out


def dataset_digests(inp: CheckInput) -> list[Finding]:
    """Each checkpoint read the language file the benchmark declares, and records the manifest it was run
    under."""
    out = []
    for path, data in inp.complete():
        meta = _meta(data)
        lang = meta.get(keys.LANGUAGE)
        pinned = inp.benchmark.pinned_sha256(lang)
        if pinned is None or meta.get(keys.BENCHMARK_SHA256) != pinned:
            out.append(Finding("dataset_digests", str(path), "metadata.benchmark_sha256",
                               f"{str(meta.get(keys.BENCHMARK_SHA256))[:16]} is not the manifest's digest for {lang!r}"))
        recorded = meta.get(keys.MANIFEST_SHA256)
        if recorded is None:   # lrb's own files and older checkpoints have no manifest digest
            out.append(Finding("dataset_digests", str(path), "metadata.manifest_sha256",
                               "not recorded, so the file cannot be tied to the benchmark manifest: "
                               "rerun the pair with kit, which records it"))
        # a manifest digest other than today's is no fault by itself: a fix of another language's file changes
        # it, and this file's own language digest (above) is what the pair was measured on, as status, run
        # and report hold it
    return out


def images_locked(inp: CheckInput) -> list[Finding]:
    """Every image digest a result names is in the image lock (host-runtime results name none)."""
    known = inp.image_ids
    out = []
    for path, data in inp.complete():
        prov = data.get(keys.PROVENANCE, {})
        digest = prov.get(keys.PROV_IMAGE, {}).get(keys.IMAGE_DIGEST)
        runtime = prov.get(keys.PROV_JOB, {}).get(keys.JOB_RUNTIME)
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


def weights_recorded(inp: CheckInput) -> list[Finding]:
    """The pairs of a run loaded one set of weights (the same weight file digests and weights manifest);
    with a weights cache, its manifest for the run's revision is the recorded one, lists the recorded
    weight file digests, and the snapshot's files hash to them now (every byte read)."""
    from kit.weights.manifest import manifest_path, read_manifest, snapshot_dir, verify_snapshot

    out = []
    hashed: dict[tuple[str, str], list[str]] = {}   # (model, revision) -> problems, each snapshot hashed once
    first: dict[str, tuple[str | None, dict, Path]] = {}
    for path, data in inp.complete():
        meta, model = _meta(data), data.get(keys.PROVENANCE, {}).get(keys.PROV_MODEL, {})
        files, digest = model.get(keys.WEIGHT_FILES_SHA256) or {}, model.get(keys.WEIGHTS_MANIFEST_SHA256)
        run = meta.get(keys.RUN) or meta.get(keys.MODEL_ID)
        seen = first.setdefault(run, (digest, files, path))
        if (digest, files) != seen[:2]:
            out.append(Finding("weights_recorded", str(path), "provenance.model",
                               f"{run} loaded other weights here than in {seen[2]}"))
        revision = meta.get(keys.MODEL_REVISION)
        if inp.weights is None or not revision:
            continue
        where = manifest_path(inp.weights, str(meta.get(keys.MODEL_ID)), str(revision))
        try:
            manifest = read_manifest(where)
        except ConfigError as exc:
            out.append(Finding("weights_recorded", str(where), "-", exc.message))
            continue
        if manifest is None:
            if digest:
                out.append(Finding("weights_recorded", str(path), "provenance.model.weights_manifest_sha256",
                                   f"no weights manifest {where} to check {digest[:16]} against"))
        elif digest and digest != manifest.digest:
            out.append(Finding("weights_recorded", str(path), "provenance.model.weights_manifest_sha256",
                               f"{digest[:16]} is not the digest of {where} ({manifest.digest[:16]})"))
        elif manifest.weight_digests() != files:
            out.append(Finding("weights_recorded", str(path), "provenance.model.weight_files_sha256",
                               f"differ from the weight files {where} lists"))
        else:   # the record and the manifest agree: so must the bytes there now, every one of them hashed
            key = (str(meta.get(keys.MODEL_ID)), str(revision))
            if key not in hashed:   # said once per snapshot, however many pairs loaded it
                hashed[key] = verify_snapshot(snapshot_dir(inp.weights, *key), manifest)
                out += [Finding("weights_recorded", str(snapshot_dir(inp.weights, *key)), "-",
                                f"the staged weights are not those the job recorded: {problem}")
                        for problem in hashed[key][:3]]
    return out


@dataclass(frozen=True)
class Rule:
    """A named check and the predicate that implements it."""

    name: str
    description: str
    check: Callable[[CheckInput], list[Finding]]


RULES = (
    Rule("pairs_complete", "every planned pair has a checkpoint, none outside the plan", pairs_complete),
    Rule("checkpoints_valid", "checkpoints parse, match their path, ids, labels and provenance, metrics recompute",
         checkpoints_valid),
    Rule("checkpoints_current", "checkpoints were recorded for the roster's runs and data as they are now",
         checkpoints_current),
    Rule("log_matches_checkpoint", "each checkpoint is the file its job logged (sha256 in run_stop)",
         log_matches_checkpoint),
    Rule("one_prompt_digest", "each run's prompt digest is the one the benchmark gives it", one_prompt_digest),
    Rule("dataset_digests", "each dataset file digest matches the manifest, and the manifest digest is recorded",
         dataset_digests),
    Rule("images_locked", "every image digest appears in the image lock", images_locked),
    Rule("revisions_pinned", "no pair ran with an unpinned revision", revisions_pinned),
    Rule("weights_recorded", "each run's pairs loaded the same weights (and, with --weights, the manifest's)",
         weights_recorded),
    Rule("mllog_compliant", "each :::MLLOG log passes mlperf-logging's checker with kit's ruleset", mllog_compliant),
)


def signed_by_trusted_key(inp: CheckInput) -> list[Finding]:
    """Each checkpoint carries an envelope a trusted key signed, whose statement names its bytes and its
    log's (kit.results.attest): a result rewritten after it was signed, or not signed, fails."""
    from kit.results.attest import signature_reasons

    return [Finding("signed_by_trusted_key", str(p), "signature", reason)
            for p, st in sorted(inp.checkpoints.items()) if st.state in (PairState.COMPLETE, PairState.STALE)
            for reason in signature_reasons(p, inp.trusted_keys or [])]


SIGNED_RULE = Rule("signed_by_trusted_key", "each checkpoint and its log are signed by a trusted key (--trusted-keys)",
                   signed_by_trusted_key)


def rules_for(inp: CheckInput) -> tuple[Rule, ...]:
    """The rules a check applies: RULES, and the signature rule when trusted keys were given."""
    return (*RULES, SIGNED_RULE) if inp.trusted_keys is not None else RULES


def run_checks(results: Path, benchmark: Dataset, runs: list[Run], expected: list[Pair],
               image_ids: frozenset[str], weights: Path | None = None,
               trusted_keys: list | None = None,
               left_out: Collection[Pair] = ()) -> tuple[CheckInput, dict[str, list[Finding]]]:
    """Validate every checkpoint of the tree against the plan of `runs`, then apply every rule
    (`weights`: a cache whose manifests the recorded weights are checked against; `trusted_keys`: the
    public keys every result must be signed by; `left_out`: planned pairs a selection leaves out, whose
    files are not checked, kit.plan.left_out_by_selection); rule name -> findings."""
    inp = CheckInput(Path(results), benchmark, expected, image_ids, {r.name: r for r in runs}, weights=weights,
                     trusted_keys=trusted_keys)
    expect = PlanExpectations(benchmark, runs)
    planned = {checkpoint_path(results, p.run, p.language): p for p in expected}
    skipped = {checkpoint_path(results, p.run, p.language) for p in left_out}
    jobs = []
    for path in iter_checkpoint_files(results):
        if path in skipped:
            continue
        pair = planned.get(path)
        # a file at the top of RESULTS has no language folder (lrb's single-language layout)
        jobs.append((path, {"run": pair.run, "language": pair.language, "expect": expect(pair)} if pair is not None
                     else {"language": path.parent.name if path.parent != Path(results) else None}))
    # on every core, each state without its predictions (no rule reads them: a release's would be GBs),
    # with its pair's compliance findings found by the worker that read it
    states = validate_many(jobs, compliance=compliance_findings)
    inp.checkpoints.update((path, state) for (path, _), state in zip(jobs, states))
    return inp, {rule.name: _pair_findings(inp, rule.name) if rule.name in PAIR_RULES else rule.check(inp)
                 for rule in rules_for(inp)}


def _pair_findings(inp: CheckInput, rule: str) -> list[Finding]:
    """A PAIR_RULE's findings, as its check gives them, from those each complete checkpoint's worker found
    (found_lines' Finding); its check itself when a state has none (the checker is not installed: it says so)."""
    complete = [(path, inp.checkpoints[path]) for path, _ in inp.complete()]
    if any(state.compliance is None for _, state in complete):
        return next(r for r in RULES if r.name == rule).check(inp)
    return [Finding(name, str(path.with_name(file)), key, message)
            for path, state in complete for name, file, key, message in state.compliance or () if name == rule]



# the rules that need only one pair's own files (its checkpoint and :::MLLOG log), no roster or benchmark
PAIR_RULES = ("log_matches_checkpoint", "mllog_compliant")


def check_pair(path: Path, data: dict) -> list[Finding]:
    """The findings `kit check` reports for one complete checkpoint under the PAIR_RULES (its log
    passes mlperf-logging's checker with its kind's ruleset, and records this file's sha256); empty
    is a PASS of those rules. A missing mlperf-logging is a MissingExtraError."""
    inp = CheckInput(Path(path).parent.parent, None, [], frozenset(),  # type: ignore[arg-type]  # unread by PAIR_RULES
                     checkpoints={Path(path): CheckpointState(PairState.COMPLETE, data=data)})
    return [finding for rule in RULES if rule.name in PAIR_RULES for finding in rule.check(inp)]


def compliance_findings(path: Path, data: dict) -> tuple[tuple[str, str, str, str], ...]:
    """check_pair's findings for one checkpoint as (rule, file name, key, message): the file (the checkpoint
    or its log) by its name beside the checkpoint, so that a finding kept in the cache reads the same
    whatever path the tree is named by later (found_lines makes them lines). Empty: a PASS of the
    PAIR_RULES. A missing mlperf-logging is a MissingExtraError."""
    return tuple((f.rule, Path(f.path).name, f.key, f.message) for f in check_pair(path, data))


def found_lines(path: Path, findings: tuple[tuple[str, str, str, str], ...]) -> list[str]:
    """The lines `kit check` prints for compliance_findings of the checkpoint at `path`."""
    return [Finding(rule, str(Path(path).with_name(name)), key, message).line() for rule, name, key, message in findings]
