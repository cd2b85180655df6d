"""`kit verify`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kit.cli import common
from kit.errors import ConfigError
from kit.config.dataset import Dataset
from kit.results.checkpoint import verify_files
from kit.results.identity import data_expectation
from kit.results.store import NON_LANGUAGE_DIRS


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--benchmark", type=click.Path(path_type=Path, exists=True), default=None,
              help="Also hold each file to this benchmark's language file: its digest, item ids and labels. "
                   "Default: the benchmark of roster.toml here, when there is one.")
@common.json_option
def verify(paths: tuple[Path, ...], benchmark: Path | None, as_json: bool) -> None:
    """Check each checkpoint on its own: it parses, matches its path, agrees with its own
    provenance record, and its metrics recompute exactly from its predictions; exit 1
    unless all pass.

    PATHS are checkpoint files or folders (searched recursively for *.json). Legacy lrb
    files without metadata.language are accepted with a notice. With a benchmark (--benchmark,
    or the one roster.toml here names), each file must also be a result on it: the
    language file's digest, the item ids in order and every expected label.

    \b
    Examples:
      kit verify results/fr/LiquidAI__LFM2.5-350M.json
      kit verify results/ --benchmark data/translations --json
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
    dataset = _benchmark(benchmark)
    outcomes = verify_files(files, (lambda path: data_expectation(dataset, path.parent.name)) if dataset else
                            (lambda path: None))
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


def _benchmark(path: Path | None) -> Dataset | None:
    """The benchmark given, or roster.toml's here; None without either."""
    from kit.config.project import load_project

    if path is not None:
        from kit.config.kinds import load_benchmark

        return load_benchmark(path)
    if Path("roster.toml").is_file():
        return load_project(Path("roster.toml"), None, allow_unpinned=True).benchmark
    return None
