"""`kit check`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import ConfigError, visible
from kit.results.evidence import NOT_PROVEN, NOT_PROVEN_SIGNED

# where `kit images build` records what it built, unless KIT_IMAGES_LOCK says otherwise
DEFAULT_IMAGES_LOCK = Path("containers/images.lock.json")


@click.command()
@click.argument("results", type=click.Path(path_type=Path, exists=True, file_okay=False))
@common.roster_option
@common.benchmark_option
@common.models_option
@common.languages_option
@click.option("--images-lock", type=click.Path(path_type=Path), default=DEFAULT_IMAGES_LOCK,
              show_default=True, envvar="KIT_IMAGES_LOCK", help="The lock of built images that result digests must appear in.")
@click.option("--weights", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
              help="A Hugging Face cache with the staged weights manifests (a site's `weights`): each pair's recorded "
                   "weights must be its manifest's.")
@click.option("--trusted-keys", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Add the rule signed_by_trusted_key: each result signed by one of these public keys "
                   "(JSON from kit keys export: one key or a list).")
@common.json_option
def check(results: Path, roster: Path, benchmark: Path | None, models: tuple[str, ...], languages: str | None,
          images_lock: Path, weights: Path | None, trusted_keys: Path | None, as_json: bool) -> None:
    """The compliance checker: PASS only when every rule holds for the results tree.

    \b
    Rules:
      pairs_complete          every planned pair (roster x benchmark) has a checkpoint
      checkpoints_valid       checkpoints parse, match their path, the benchmark's ids and
                              labels and their own provenance; metrics recompute exactly
      checkpoints_current     recorded for the roster's runs and data as they are now
      log_matches_checkpoint  each checkpoint is the file its job logged (sha256 in run_stop)
      one_prompt_digest       each run's prompt digest is the one the benchmark gives it
      dataset_digests         each dataset file digest matches the manifest; the manifest digest is recorded
      images_locked           every image digest appears in the image lock
      revisions_pinned        no pair ran with an unpinned revision
      weights_recorded        the pairs of a run loaded the same weights; with --weights DIR,
                              the weights manifest there (kit weights stage) is the one each
                              pair recorded and lists its weight file digests
      mllog_compliant         each :::MLLOG log passes mlperf-logging's compliance checker
                              with kit's ruleset (kit/defaults/mllog_ruleset.yaml)
      signed_by_trusted_key   with --trusted-keys FILE: each checkpoint and its log are the
                              bytes a trusted key signed (kit sign); a signature proves who
                              published a result, not that the computation was honest

    Failures are listed one per line with rule, file and key. Exit 0 on PASS, 1 on FAIL.

    \b
    Examples:
      kit check results --roster roster.toml
      kit check results --roster roster.toml --weights ~/.cache/huggingface/hub
    """
    from kit.config.project import load_project
    from kit.images.built import load_lock
    from kit.plan import left_out_by_selection, select_pairs
    from kit.results.check import rules_for, run_checks
    from kit.results.store import left_out_note

    if images_lock != DEFAULT_IMAGES_LOCK and not images_lock.exists():
        raise ConfigError(f"--images-lock {images_lock}: no such file",
                          fix="pass the images lock the images were built with (containers/images.lock.json)")
    project = load_project(roster, benchmark, allow_unpinned=True)
    runs = project.roster.select(models)
    expected = select_pairs(runs, project.benchmark, common.split_languages(languages))
    image_ids = frozenset(img.image_id for img in load_lock(images_lock).images.values())
    trusted = common.trusted_keys(trusted_keys)
    left_out = left_out_by_selection(project.roster.run, project.benchmark, expected) if models or languages else ()
    inp, findings = run_checks(results, project.benchmark, runs, expected, image_ids, weights, trusted, left_out)
    rules = rules_for(inp)
    failed = [f for rule in rules for f in findings[rule.name]]
    verdict = "PASS" if not failed else "FAIL"
    data = {"verdict": verdict, "checkpoints": len(inp.checkpoints), "expected": len(expected),
            "rules": {r.name: {"description": r.description, "findings": [vars(f) for f in findings[r.name]]}
                      for r in rules}, "not_proven": NOT_PROVEN_SIGNED if trusted is not None else NOT_PROVEN,
            "not_counted": left_out_note(results)}
    render(Outcome("check", data, _lines(rules, findings, failed, verdict, len(inp.checkpoints), len(expected),
                                         data["not_counted"], data["not_proven"]),
                   failed=bool(failed)), as_json)


def _lines(rules, findings, failed, verdict: str, checkpoints: int, expected: int, not_counted: str | None = None,
           caveat: str = NOT_PROVEN):
    """Each rule's verdict, each finding, the total, and what the archive holds that was not checked."""
    for rule in rules:
        n = len(findings[rule.name])
        yield f"{'ok  ' if not n else 'FAIL'}  {rule.name:<22} {rule.description}" + (f" ({n})" if n else "")
    for f in failed:
        yield visible(f.line())   # a file name with a newline makes no line of its own
    yield f"{verdict}: {checkpoints} checkpoints, {expected} expected pairs, {len(failed)} findings"
    if not_counted:
        yield not_counted
    yield caveat
