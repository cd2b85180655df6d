"""`kit run`'s weights preflight: before anything is submitted, each run with pending pairs must have
its snapshot at its pinned revision in the site's `weights` folder, with its weights manifest and
the file sizes the manifest lists (one command on the frontend per site; on this machine for a
local site). Otherwise the run is refused with the exact `kit weights stage` and `kit weights push`
commands that fix it. A dry run shows the check and warns instead of refusing; it asks no remote
frontend (a dry run makes no ssh connection), so there it says what will be checked."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kit.config.roster import Run
from kit.launch.site import ResolvedSite
from kit.errors import ConfigError, KitError, SubmitError
from kit.launch.weights_push import probe, remote_manifest_path, remote_snapshot_dir, weights_root
from kit.weights.manifest import parse_manifest, size_problems
from kit.weights.select import missing_for

OK, MISSING, UNCHECKED = "ok", "missing", "unchecked"


@dataclass(frozen=True)
class WeightsCheck:
    """One run's weights at one site: ok, missing (with why) or unchecked (with why)."""

    site: str
    run: str
    revision: str | None
    where: str
    state: str
    detail: str

    def line(self) -> str:
        """One line for the plan."""
        return f"weights of {self.run} at {self.site}: {self.state}: {self.detail}"


@dataclass
class WeightsPreflight:
    """The weights check of a whole `kit run`."""

    checks: list[WeightsCheck] = field(default_factory=list)
    fix: str | None = None              # the commands that stage and push what is missing
    warnings: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[WeightsCheck]:
        """The runs whose weights are not where their jobs read them."""
        return [c for c in self.checks if c.state == MISSING]

    def lines(self, site: str | None = None) -> list[str]:
        """The check's lines (for one site, or all)."""
        return [c.line() for c in self.checks if site is None or c.site == site]

    def as_dict(self) -> dict:
        """JSON-ready."""
        return {"checks": [vars(c) for c in self.checks], "fix": self.fix, "warnings": self.warnings}


def preflight_weights(plan, runs: Iterable[Run], *, dry_run: bool = False,
                      roster: Path | None = None, sites_file: Path | None = None) -> WeightsPreflight:
    """Check the weights of every run with pending pairs at each site of `plan` (a RunPlan; its
    SitePlans say which pairs go where). Without `dry_run`, missing weights raise a ConfigError (a site
    with no `weights` folder) or a SubmitError (weights not staged there), whose fix is the commands
    to run; `roster` and `sites_file` (as given to `kit run`) are written into those commands."""
    by_name = {r.name: r for r in runs}
    wanted: dict[str, tuple[ResolvedSite, list[Run]]] = {}
    for sp in plan.sites:
        site, names = wanted.setdefault(sp.site.name, (sp.where, []))
        for name in sorted({p.run for p in sp.pairs}):
            if by_name[name] not in names:
                names.append(by_name[name])
    result = WeightsPreflight()
    no_weights = []
    for site, site_runs in wanted.values():
        if not site.config.weights:
            no_weights.append(site.name)
            result.checks += [WeightsCheck(site.name, r.name, r.revision, "-", MISSING,
                                           "the site has no `weights` folder in sites.toml, so its jobs would find "
                                           "no weights offline") for r in site_runs]
            continue
        result.checks += check_site(site, site_runs, dry_run=dry_run)
    for c in result.checks:
        if c.state == UNCHECKED and c.revision is None:
            result.warnings.append(c.line())
    missing = result.missing
    if not missing:
        return result
    result.fix = fix_commands(missing, roster, sites_file, no_weights)
    summary = "; ".join(f"{c.run} at {c.site}: {c.detail}" for c in missing[:4]) + (
        f" (and {len(missing) - 4} more)" if len(missing) > 4 else "")
    if dry_run:
        result.warnings.append(f"weights missing, `kit run` will refuse: {summary}; fix: {result.fix}")
        return result
    error = ConfigError if no_weights and all(c.site in no_weights for c in missing) else SubmitError
    raise error(f"weights are not staged where the jobs read them, nothing was submitted: {summary}", fix=result.fix)


def check_site(resolved: ResolvedSite, runs: list[Run], *, dry_run: bool = False) -> list[WeightsCheck]:
    """The weights checks of the runs at one site that has a `weights` folder."""
    root, site, frontend = weights_root(resolved), resolved.config, resolved.frontend
    pinned = [r for r in runs if r.revision]
    out = [WeightsCheck(site.name, r.name, None, root, UNCHECKED,
                        "no pinned revision (--allow-unpinned): the job takes refs/main of its cache, unchecked")
           for r in runs if not r.revision]
    if dry_run and site.is_remote:
        return out + [WeightsCheck(site.name, r.name, r.revision, remote_snapshot_dir(root, r.model_id, r.revision),
                                   UNCHECKED, f"checked on {site.frontend} before submitting: "
                                   f"{remote_snapshot_dir(root, r.model_id, r.revision)} and its manifest "
                                   f"{remote_manifest_path(root, r.model_id, str(r.revision))}")
                      for r in pinned]
    keys = sorted({(r.model_id, str(r.revision)) for r in pinned})
    found = probe(frontend, root, keys)
    for r in pinned:
        snap = remote_snapshot_dir(root, r.model_id, str(r.revision))
        problem, detail = judge(r, found[r.model_id, str(r.revision)], root)
        out.append(WeightsCheck(site.name, r.name, r.revision, snap, MISSING if problem else OK, problem or detail))
    return out


def judge(run: Run, there, root: str) -> tuple[str | None, str]:
    """(why the run's staged weights will not do, or None; what was found)."""
    where = remote_manifest_path(root, run.model_id, str(run.revision))
    if there.manifest_text is None:
        snap = remote_snapshot_dir(root, run.model_id, str(run.revision))
        if there.sizes:
            return f"{snap} has no weights manifest ({where})", ""
        return f"no snapshot at revision {str(run.revision)[:12]} in {root}", ""
    try:
        manifest = parse_manifest(there.manifest_text, where)
    except KitError as exc:
        return exc.message, ""
    if (manifest.model, manifest.revision) != (run.model_id, run.revision):
        return f"{where} is the manifest of {manifest.model}@{manifest.revision[:12]}", ""
    problems = size_problems(manifest, there.sizes)
    if problems:
        return f"the snapshot does not match its manifest: {'; '.join(problems[:3])}", ""
    lacking = missing_for(run.backend, manifest.files, run.options.get("gguf_file"))
    if lacking:
        return f"{lacking} (staged for {', '.join(manifest.backends) or 'another backend'})", ""
    return None, (f"manifest {manifest.digest[:12]}, {len(manifest.files)} files, "
                  f"{manifest.total_bytes / 1e6:.1f} MB in {remote_snapshot_dir(root, run.model_id, str(run.revision))}")


def fix_commands(missing: list[WeightsCheck], roster: Path | None, sites_file: Path | None,
                 no_weights: list[str]) -> str:
    """The commands that put the missing runs' weights in place, as one line."""
    common = []
    if roster is not None and str(roster) != "roster.toml":
        common += ["--roster", str(roster)]
    models = [a for name in dict.fromkeys(c.run for c in missing) for a in ("--model", name)]
    steps = [shlex.join(["kit", "weights", "stage", *common, *models])]
    for site in dict.fromkeys(c.site for c in missing):
        site_models = [a for name in dict.fromkeys(c.run for c in missing if c.site == site) for a in ("--model", name)]
        extra = ["--sites-file", str(sites_file)] if sites_file is not None and str(sites_file) != "sites.toml" else []
        steps.append(shlex.join(["kit", "weights", "push", "--site", site, *extra, *common, *site_models]))
    first = (f"add weights = \"/home/<login>/hf-hub\" (a path on the cluster) to [site.{'], [site.'.join(no_weights)}] "
             "in sites.toml, then " if no_weights else "")
    return first + " && ".join(steps)
