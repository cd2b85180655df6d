"""`kit weights`: stage model weights here from the Hub, push them to a site, verify them."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import ConfigError

cache_option = click.option(
    "--cache", type=click.Path(path_type=Path), default=None, envvar="KIT_WEIGHTS_CACHE",
    help="The Hugging Face cache staged weights go to and are pushed from. Default: HF_HUB_CACHE, else "
         "HF_HOME/hub, else ~/.cache/huggingface/hub. Env: KIT_WEIGHTS_CACHE.")
models_option = click.option("--model", "models", multiple=True, metavar="MODEL",
                             help="Only this run (name or model id); repeat for several. Default: every run of the roster.")


@click.group()
def weights() -> None:
    """Stage model weights from the Hub, push them to a site, verify them.

    Jobs read weights offline from the site's `weights` folder (a Hugging Face cache) at each
    run's pinned revision. `stage` downloads what each run's backend needs with huggingface_hub
    and writes a weights manifest beside the snapshot (every file's size and sha256); `push`
    copies the snapshot and its manifest to the site; `kit run` refuses a run whose weights are
    not there. Jobs check sizes against the manifest instead of hashing every byte at each load;
    `verify` is the full hash.

    \b
    Examples:
      kit weights stage --model LiquidAI/LFM2.5-2.6B
      kit weights push --site nancy --model LiquidAI/LFM2.5-2.6B
      kit weights verify --site nancy
    """


def _runs(roster: Path, models: tuple[str, ...]):
    """The roster's runs these commands act on (--model, else all); each must name its revision, since
    weights are staged, pushed and checked at one commit (another run of the roster need not)."""
    from kit.config.roster import load_roster

    runs = load_roster(roster, allow_unpinned=True)[0].select(models)
    unpinned = [r.name for r in runs if not r.revision]
    if unpinned:
        raise ConfigError(f"{roster}: run {unpinned[0]!r} has no revision"
                          + (f" (and {len(unpinned) - 1} more)" if len(unpinned) > 1 else "")
                          + ": weights are staged at one pinned commit",
                          fix="add revision = '<40-hex commit>' to that [[run]] (the commit hash on the model's Hub "
                              "page), or leave it out with --model")
    return runs


def _snapshots(runs) -> list[tuple[str, str]]:
    return sorted({(r.model_id, str(r.revision)) for r in runs})


@weights.command("stage")
@common.roster_option
@models_option
@cache_option
@click.option("--token-file", type=click.Path(path_type=Path), default=None, envvar="KIT_HF_TOKEN_FILE",
              help="A file holding a Hugging Face token (mode 600), for gated or private models. Env: KIT_HF_TOKEN_FILE.")
@click.option("--site", "site_name", default=None, metavar="NAME",
              help="Use this site's hf_token_file (it must be readable on this machine) when --token-file is not given.")
@common.sites_option
@common.json_option
def stage(roster: Path, models: tuple[str, ...], cache: Path | None, token_file: Path | None, site_name: str | None,
          sites_file: Path, as_json: bool) -> None:
    """Download each run's files at its pinned revision and write its weights manifest.

    Uses huggingface_hub's own client (HF_ENDPOINT names another hub or a mirror): the
    safetensors, configuration and tokenizer files for Transformers, vLLM, GLiNER2 and
    GLiClass; for llama.cpp the one GGUF file the run names (options.gguf_file). Every file
    is checked against the Hub's listing (sha256 of LFS files), then the manifest is written
    at <cache>/models--org--name/kit-manifests/<revision>.json. Files already here are not
    downloaded again, so a stage that stopped is finished by running it again. The token is
    read from the file and handed to huggingface_hub only; it is never printed.

    \b
    Examples:
      kit weights stage --model LiquidAI/LFM2.5-2.6B
      kit weights stage --cache /data/hf-hub --token-file ~/.config/kit/hf_token --json
    """
    from kit.weights.stage import StageResult, stage as stage_run

    runs = _runs(roster, models)
    token = _token(token_file, site_name, sites_file)
    cache = _cache_folder(cache)
    done: dict[tuple, StageResult] = {}
    for run in runs:
        key = (run.model_id, run.revision, run.backend, run.options.get("gguf_file"), run.trust_remote_code)
        if key in done:
            continue
        done[key] = stage_run(run.model_id, str(run.revision), run.backend, cache,
                              gguf_file=run.options.get("gguf_file"), trust_remote_code=run.trust_remote_code,
                              token=token, progress=common.say)
    render(Outcome("weights stage", {"cache": str(cache), "staged": [r.as_dict() for r in done.values()]},
                   map(_staged_line, done.values())), as_json)


def _staged_line(result) -> str:
    """One staged snapshot: its files, size, what was downloaded now, and where its manifest is."""
    return (f"staged {result.model}@{result.revision[:12]} ({result.backend}): {len(result.files)} files, "
            f"{result.bytes / 1e6:.1f} MB ({len(result.fetched)} downloaded now), manifest "
            f"{result.digest[:12]} at {result.manifest}")


def _token(token_file: Path | None, site_name: str | None, sites_file: Path) -> str | None:
    """The token from --token-file or the site's hf_token_file (mode-checked), or None."""
    if token_file is None and site_name is not None:
        from kit.launch.site import load_site

        resolved = load_site(sites_file, site_name)
        site = resolved.config
        if site.hf_token_file:
            token_file = resolved.local_path(site.hf_token_file)
            if site.is_remote and not token_file.is_file():
                raise ConfigError(f"site {site.name}: hf_token_file {token_file} is a path on the cluster and not on "
                                  "this machine, where staging runs", fix="pass --token-file FILE (mode 600) here")
    if token_file is None:
        return None
    from kit.weights.token import read_token_file

    return read_token_file(token_file)


@weights.command("push")
@click.option("--site", "site_name", required=True, metavar="NAME", help="The site whose `weights` folder to fill.")
@common.sites_option
@common.roster_option
@models_option
@cache_option
@common.json_option
def push(site_name: str, sites_file: Path, roster: Path, models: tuple[str, ...], cache: Path | None,
         as_json: bool) -> None:
    """Copy staged snapshots and their manifests to a site's `weights` folder.

    Through the site's frontend (its one ssh connection; nothing of kit runs there): only the
    files the site lacks (or has with another size) are sent, an interrupted copy resumes
    where it stopped, every file is hashed there with sha256sum against the manifest, and the
    manifest is written last, so a snapshot with a manifest at the site is complete.

    \b
    Examples:
      kit weights push --site nancy --model LiquidAI/LFM2.5-2.6B
      kit weights push --site cluster --cache /data/hf-hub --json
    """
    from kit.launch.site import load_site
    from kit.launch.weights_push import probe, push_snapshot, weights_root

    site = load_site(sites_file, site_name)
    runs = _runs(roster, models)
    cache = _cache_folder(cache)
    manifests = [_staged(cache, model, revision, roster, [r for r in runs if r.model_id == model and r.revision == revision])
                 for model, revision in _snapshots(runs)]
    root = weights_root(site)
    frontend = site.frontend
    there = probe(frontend, root, _snapshots(runs))
    results = [push_snapshot(frontend, root, cache, m, there[m.model, m.revision], common.say) for m in manifests]
    render(Outcome("weights push", {"site": site.name, "weights": root, "snapshots": [r.as_dict() for r in results]},
                   [_pushed_line(site.name, root, results)]), as_json)


def _pushed_line(site_name: str, root, results) -> str:
    """The push in one line: snapshots pushed, already there, and the bytes sent."""
    sent = sum(sum(r.sent.values()) for r in results)
    return (f"site {site_name}: {len(results)} snapshot(s) in {root}: "
            f"{sum(r.state == 'pushed' for r in results)} pushed, {sum(r.state == 'present' for r in results)} "
            f"already there; {sent / 1e6:.1f} MB sent")


def _staged(cache: Path, model: str, revision: str, roster: Path, runs):
    """The local manifest of a snapshot, checked against the snapshot's sizes and the runs' backends."""
    from kit.weights.manifest import local_sizes, manifest_path, read_manifest, size_problems, snapshot_dir
    from kit.weights.select import missing_for

    import shlex

    args = ([] if str(roster) == "roster.toml" else ["--roster", str(roster)]) + [a for r in runs for a in ("--model", r.name)]
    again = shlex.join(["kit", "weights", "stage", *args, "--cache", str(cache)])
    manifest = read_manifest(manifest_path(cache, model, revision))
    if manifest is None:
        raise ConfigError(f"{model}@{revision[:12]} is not staged in {cache} (no weights manifest)", fix=again)
    problems = size_problems(manifest, local_sizes(snapshot_dir(cache, model, revision)))
    if problems:
        raise ConfigError(f"the staged snapshot of {model}@{revision[:12]} in {cache} does not match its manifest: "
                          f"{'; '.join(problems[:3])}", fix=again)
    for run in runs:
        lacking = missing_for(run.backend, manifest.files, run.options.get("gguf_file"))
        if lacking:
            raise ConfigError(f"{run.name}: {lacking} in {cache}", fix=again)
    return manifest


@weights.command("verify")
@click.option("--site", "site_name", default=None, metavar="NAME",
              help="Verify the copies in this site's `weights` folder (over its frontend) instead of the staged ones here.")
@common.sites_option
@common.roster_option
@models_option
@cache_option
@common.json_option
def verify(site_name: str | None, sites_file: Path, roster: Path, models: tuple[str, ...], cache: Path | None,
           as_json: bool) -> None:
    """Hash every file of every run's snapshot and compare it with its manifest.

    Here (the staged cache) or, with --site, at the site (sha256sum on its frontend; nothing
    of kit is needed there). This is the full check jobs skip at load time, where they compare
    sizes only. Exit 1 when any file differs, is missing, or a snapshot has no manifest.

    \b
    Examples:
      kit weights verify
      kit weights verify --site nancy --model LiquidAI/LFM2.5-2.6B --json
    """
    runs = _runs(roster, models)
    if site_name is not None:
        from kit.launch.site import load_site
        from kit.launch.weights_push import verify_on_site, weights_root

        site = load_site(sites_file, site_name)
        root = weights_root(site)
        rows = [v.as_dict() for v in verify_on_site(site.frontend, root, _snapshots(runs), common.say)]
    else:
        rows = _verify_here(_cache_folder(cache), _snapshots(runs))
    render(Outcome("weights verify", {"site": site_name, "snapshots": rows}, map(_verified_line, rows),
                   failed=any(not r["ok"] for r in rows)), as_json)


def _cache_folder(cache: Path | None) -> Path:
    """The weights cache the command uses (--cache, else the Hugging Face default), refused in one line when
    something other than a folder is in its place (every file in it would otherwise fail on its own)."""
    from kit.files import not_a_folder
    from kit.weights.stage import default_cache

    folder = cache or default_cache()
    blocked = not_a_folder(folder)
    if blocked is not None:
        raise ConfigError(f"weights cache {folder}: {blocked} is not a folder",
                          fix="point --cache (KIT_WEIGHTS_CACHE, HF_HUB_CACHE) at a Hugging Face cache folder")
    return folder


def _verified_line(row: dict) -> str:
    """One snapshot's verdict, where its files are, and its problems when it failed."""
    head = f"{'ok  ' if row['ok'] else 'FAIL'}  {row['model']}@{row['revision'][:12]}: {row['files']} files at {row['where']}"
    return head + ("" if row["ok"] else ": " + "; ".join(row["problems"]))


def _verify_here(cache: Path, keys: list[tuple[str, str]]) -> list[dict]:
    from kit.weights.manifest import manifest_path, read_manifest, snapshot_dir, verify_snapshot

    rows = []
    for model, revision in keys:
        snap = snapshot_dir(cache, model, revision)
        try:
            manifest = read_manifest(manifest_path(cache, model, revision))
        except ConfigError as exc:
            manifest, problems = None, [exc.message]
        else:
            problems = ["no weights manifest: not staged (kit weights stage)"] if manifest is None else []
        if manifest is not None:
            common.say(f"{model}@{revision[:12]}: hashing {len(manifest.files)} files ...")
            problems = verify_snapshot(snap, manifest)
        rows.append({"model": model, "revision": revision, "where": str(snap),
                     "manifest_sha256": manifest.digest if manifest else None,
                     "files": len(manifest.files) if manifest else 0, "ok": not problems, "problems": problems})
    return rows
