"""`kit export`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render


@click.command()
@click.argument("fmt", metavar="FORMAT", type=click.Choice(["lrb"]))
@click.argument("results", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Folder the files go to (outside RESULTS): new, or one kit exported to before (its files kept, "
                   "those of the same pairs replaced); a folder holding other files is refused.")
@common.json_option
def export(fmt: str, results: Path, output: Path, as_json: bool) -> None:
    """Write a results tree's checkpoints as another tool's own result files.

    lrb: the land-use relevance benchmark's result files, which its loader reads
    (OUTPUT/<language>/<run>.json): its metadata keys only (a variant run's name as
    run_id), unparsed as null, metrics recomputed. A file lrb itself wrote (no kit
    provenance) comes back byte for byte, in the place it had (lrb's top level or a
    batch folder); RESULTS/archive/ is left out, as lrb's discovery leaves it out. Nothing is written when a checkpoint
    is invalid or not an lrb one, or when two checkpoints would give one lrb file
    different contents (lrb's top-level copy of a run and its copy in a batch folder);
    they are listed and the exit code is 1. Byte-equal copies give the file once, said.

    \b
    Example:
      kit export lrb results -o lrb-results
    """
    from kit.results.kinds.lrb.export import export_lrb

    done = export_lrb(results, output)
    render(Outcome("export", {"format": fmt, "written": [str(p) for p in done.written],
                              "refused": {str(p): reasons for p, reasons in done.refused.items()},
                              "same_as": {str(p): str(kept) for p, kept in done.same_as.items()},
                              "converted": {str(p): left_out for p, left_out in done.converted.items()},
                              "not_counted": done.not_counted},
                   _lines(done, output), failed=bool(done.refused)), as_json)


def _lines(done, output: Path):
    """Each refused checkpoint with its reasons, then what was written (or that nothing was)."""
    for path, reasons in done.refused.items():
        yield f"FAIL  {path}: {'; '.join(reasons)}"
    if not done.refused:
        yield f"{len(done.written)} lrb result files written to {output}"
        for path, kept in done.same_as.items():
            yield f"  {path}: the same lrb file as {kept}, written once"
        for path, left_out in done.converted.items():
            yield (f"  {path}: converted, not given back as it is: lrb's writer as kit knows it writes no "
                   f"{'; no '.join(left_out)}, which the export leaves out (the file itself is unchanged)")
    else:
        yield f"nothing written: {len(done.refused)} checkpoint(s) cannot be exported"
    if done.not_counted:
        yield done.not_counted
