"""Sites for tests: sites.toml text written from Site models (no hand-written TOML blocks), and
`kit run`'s one planning entry called on a workspace."""

from __future__ import annotations

import json
from pathlib import Path

from kit.config.sites import Site


def sites_toml(*sites: Site) -> str:
    """The sites.toml text of these sites: each value given or differing from its default, as TOML
    (a value given equal to its default is written too: some defaults depend on the scheduler)."""
    out = []
    for site in sites:
        out.append(f"[site.{site.name}]")
        for key, value in site.model_dump(exclude={"name"}).items():
            if value is None or (key not in site.model_fields_set and value == Site.model_fields[key].default):
                continue
            # scalars, strings and lists of strings: JSON's spelling is TOML's; a table of strings is inline
            if isinstance(value, dict):
                text = "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + " }"
            else:
                text = json.dumps(list(value) if isinstance(value, tuple) else value)
            out.append(f"{key} = {text}")
        out.append("")
    return "\n".join(out)


def plan_kit_run(workdir: Path, site_names: list[str], *, sites: list[Site] | None = None, roster: Path | None = None,
                 dry_run: bool = True, now=None, **request):
    """`kit run`'s plan (kit.launch.run.prepare_kit_run) for the workspace `workdir` (its roster.toml
    and sites.toml); `sites`, when given, are written to its sites.toml first. A dry run by default:
    the weights check then warns instead of refusing."""
    from kit.launch.run import RunRequest, prepare_kit_run

    workdir = Path(workdir)
    if sites is not None:
        (workdir / "sites.toml").write_text(sites_toml(*sites))
    req = RunRequest(workdir / "sites.toml", tuple(site_names), roster or workdir / "roster.toml", dry_run=dry_run,
                     **request)
    return prepare_kit_run(req, now=now)
