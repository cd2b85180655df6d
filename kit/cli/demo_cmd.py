"""`kit demo`."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import ConfigError, SubmitError, visible, warn


@click.command()
@click.option("--workdir", type=click.Path(path_type=Path), default="kit-demo", show_default=True,
              help="Folder for the demo's roster, sites file, results and report.")
@click.option("--runtime", type=click.Choice(["host", "docker"]), default="host", show_default=True,
              help="Run the jobs on the host, or in the built transformers-5.17 Docker image "
                   "(make base-image image-transformers-5.17-cpu), as REPRODUCE.md does.")
@click.option("--drift", is_flag=True,
              help="Then rerun each result on purpose on the other setups this machine can run (kit reproduce "
                   "--as): transformers in bfloat16 on the host; llama.cpp and vLLM on the CPU in their Docker "
                   "images when the images lock records them. The report gains the drift table; a setup that "
                   "cannot run here is named with what makes it possible.")
@click.option("--images-lock", type=click.Path(path_type=Path, dir_okay=False), default=Path("containers/images.lock.json"),
              show_default=True, envvar="KIT_IMAGES_LOCK", help="With --drift: the lock of built images.")
@common.json_option
def demo(workdir: Path, runtime: str, drift: bool, images_lock: Path, as_json: bool) -> None:
    """Run the embedded default sweep end to end: no files, no network.

    Creates once (cached under the user cache dir, KIT_CACHE_DIR overrides) a tiny
    Llama and a tiny reranker laid out like the Hugging Face cache, fitted for a few
    seconds to the demo task (so their scores are above chance and differ by model and
    language), and a tiny three-language benchmark in the lrb format. Then it plans, submits the shard to
    the `local` site (the same launcher and job script a cluster gets), shows the
    status and writes the report. A second run skips every complete pair. A roster.toml
    or sites.toml in --workdir that an earlier demo did not write is never replaced.

    \b
    Examples:
      kit demo                                  in ./kit-demo, on this Python
      kit demo --runtime docker --workdir kit-demo-docker    in the built image
      kit demo --drift                          then the drift table: bfloat16, llama.cpp, vLLM
      kit demo --json                           the outcome as one JSON envelope
    """
    import os

    from kit.config.project import load_project
    from kit.demo.run import prepare_demo
    from kit.launch.overview import plan_overview
    from kit.launch.run import RunRequest, prepare_kit_run
    from kit.launch.submit import submit_run
    from kit.results.report import write_report
    from kit.results.identity import PlanExpectations
    from kit.results.status import count_states, pair_states

    t0 = time.perf_counter()
    show = common.say if as_json else click.echo   # under --json, stdout holds the envelope alone
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if drift and images_lock.is_file():   # a damaged lock is refused before the sweep, not after it
        from kit.images.built import load_lock

        load_lock(images_lock)
    files = prepare_demo(workdir, progress=common.say, runtime=runtime)
    project = load_project(files.roster, None)
    runs = list(project.roster.run)
    ov = plan_overview(project, runs, None, (0, 1), files.results)
    c = ov.counts
    show(f"plan: {len(ov.runs)} runs x {len(ov.languages)} languages ({', '.join(ov.languages)}) = "
         f"{ov.pairs} pairs, {ov.total_prompts} prompts; {c['complete']} complete, {c['pending']} pending")
    prepared = prepare_kit_run(RunRequest(files.sites, ("local",), files.roster))
    for warning in prepared.warnings:
        warn(warning)
    plan = prepared.plan
    if plan.pending:
        subs = submit_run(plan)
        stopped = next((s.stopped_by for s in subs if s.stopped_by), None)
        if stopped:   # Ctrl-C (or a TERM) reached the job, which stopped with its checkpoints whole
            name = signal.Signals(stopped).name
            render(Outcome("demo", {"workdir": str(files.workdir), "stopped_by": name},
                           [f"demo stopped by {name}: the pairs written are kept; `kit demo` again resumes"],
                           stopped_by=name), as_json)
            return
        codes = {j: code for s in subs for j, code in s.exit_codes.items() if code}
        if codes and set(codes.values()) == {2}:   # the job refused its input: its one error line is above
            raise ConfigError(f"demo job {', '.join(codes)} stopped on bad input (its error is above, and in its log "
                              f"in {files.workdir / 'logs'})", fix="do what its error says, then run kit demo again")
        if codes:
            raise SubmitError(f"demo job {', '.join(codes)} failed", fix=f"read its log in {files.workdir / 'logs'}")
    else:
        show("every pair is already complete: nothing to run")
    statuses = pair_states(files.results, ov.assigned, PlanExpectations(project.benchmark, runs))
    counts = count_states(statuses)
    for s in statuses:   # progress too: shown before the report, which refuses a tree without a complete pair
        show(f"  {s.state:<9} {s.pair.run} [{s.pair.language}]  {visible(str(s.path))}")
    show("status: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    drifted = None
    if drift:
        drifted = _drift(files, images_lock, show)
        for name, why in drifted.skipped.items():
            show(f"drift: {name} not measured here: {why}")
        for where, why in drifted.failed.items():
            warn(f"drift rerun {where} failed: {why}")
    paths = write_report(files.results, files.report)
    seconds = time.perf_counter() - t0
    text = list(_lines(files, paths, seconds))
    if drifted is not None:
        text.insert(2, f"drift    {len(drifted.verdicts)} reruns in {files.workdir / 'reproduce-drift'}; the drift table "
                       f"is in the report (drift.csv, index.html)")
    if as_json:
        for line in text:   # under --json the summary is progress too: stdout holds the envelope alone
            show(line)
    data = {"workdir": str(files.workdir), "results": str(files.results), "roster": str(files.roster),
            "sites": str(files.sites), "assets": str(files.cache), "counts": counts,
            "report": {role: str(p) for role, p in paths.files.items()}, "seconds": round(seconds, 1)}
    if drifted is not None:
        data["drift"] = {"verdicts": [str(p) for p in drifted.verdicts], "not_measured": drifted.skipped,
                         "failed": drifted.failed}
    failed = counts.get("complete", 0) != len(statuses) or bool(drifted and drifted.failed)
    render(Outcome("demo", data, text, failed=failed), as_json)


def _drift(files, images_lock: Path, show):
    """`--drift`: the demo's results rerun on the setups this machine has (kit.demo.drift), each through
    `kit reproduce --as` (kit.repro.reproduce)."""
    from kit.demo.drift import drift_setups, run_drift
    from kit.images.built import load_lock
    from kit.repro.compare import Tolerance
    from kit.repro.deliberate import parse_as, parse_engine_env
    from kit.repro.reproduce import RerunOptions, reproduce
    from kit.repro.resolve import docker_image_id

    lock = load_lock(images_lock) if images_lock.is_file() else None
    setups, skipped = drift_setups(files.hub, lock, images_lock, lambda image_id: docker_image_id(image_id) == image_id)

    def rerun(result: Path, setup, out: Path) -> Path:
        options = RerunOptions(runtime=setup.runtime, images_lock=images_lock, weights=files.hub,
                               deliberate=parse_as(setup.as_values, setup.as_model, setup.as_options),
                               engine_env=parse_engine_env(setup.engine_env))
        return reproduce(result, options, Tolerance(), out).files[0]

    return run_drift(files.results, setups, skipped, rerun, say=show)


def _lines(files, paths, seconds: float):
    """Where the demo's results, report and inputs are, and how long it took."""
    yield f"\nresults  {visible(str(files.results))}"
    yield f"report   {visible(str(files.report))}  ({', '.join(visible(p.name) for p in paths.files.values())})"
    yield f"roster   {visible(str(files.roster))}\nsites    {visible(str(files.sites))}\nassets   {visible(str(files.cache))}"
    yield f"done in {seconds:.1f}s; run `kit demo` again: every pair is skipped"
