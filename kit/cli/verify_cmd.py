"""`kit verify`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit.cli import common
from kit.errors import ConfigError
from kit.results.checkpoint import verify_files
from kit.results.store import NON_LANGUAGE_DIRS


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@common.json_option
def verify(paths: tuple[Path, ...], as_json: bool) -> None:
    """Recompute each checkpoint's metrics from its predictions; exit 1 unless all match exactly.

    PATHS are checkpoint files or folders (searched recursively for *.json). Legacy lrb
    files without metadata.language are accepted with a notice.

    \b
    Example:
      kit verify results/fr/LiquidAI__LFM2.5-350M.json
      kit verify results/
    """
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*.json")
                                if not q.name.startswith(".") and not NON_LANGUAGE_DIRS & set(q.relative_to(p).parts[:-1])))
        else:
            files.append(p)
    if not files:
        raise ConfigError(f"no checkpoint files under {', '.join(map(str, paths))}",
                          fix="pass *.json files or folders holding them")
    outcomes = verify_files(files)
    bad = [(p, st) for p, st in outcomes if st.state != "complete"]
    if as_json:
        common.print_json("verify", common.OK if not bad else common.FAILED,
                     [{"path": str(p), "state": st.state, "reasons": st.reasons, "notices": st.notices}
                      for p, st in outcomes])
    else:
        for p, st in outcomes:
            if st.state == "complete":
                note = f"  ({'; '.join(st.notices)})" if st.notices else ""
                click.echo(f"OK    {p}{note}")
            else:
                click.echo(f"FAIL  {p}: {'; '.join(st.reasons)}")
        click.echo(f"{len(outcomes) - len(bad)} verified, {len(bad)} failed")
    if bad:
        sys.exit(1)
