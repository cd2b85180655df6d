"""`kit verify`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import visible
from kit.results.evidence import NOT_PROVEN, NOT_PROVEN_SIGNED


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--benchmark", type=click.Path(path_type=Path, exists=True), default=None,
              help="Also hold each file to this benchmark's language file: its digest, item ids and labels. "
                   "Default: the benchmark of roster.toml here, when there is one.")
@click.option("--trusted-keys", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Also require each file to be signed by one of these public keys (JSON from kit keys export: "
                   "one key or a list), its envelope's statement naming the file's and its log's sha256.")
@common.json_option
def verify(paths: tuple[Path, ...], benchmark: Path | None, trusted_keys: Path | None, as_json: bool) -> None:
    """Check each checkpoint on its own: it parses, matches its path, agrees with its own
    provenance record, and its metrics recompute exactly from its predictions; exit 1
    unless all pass.

    PATHS are checkpoint files or folders (searched recursively for *.json). Legacy lrb
    files without metadata.language are accepted with a notice. With a benchmark (--benchmark,
    or the one roster.toml here names), each file must also be a result on it: the
    language file's digest, the item ids in order and every expected label.
    With --trusted-keys, each file must also carry an envelope (kit sign) that one of those keys
    signed, naming its bytes and its log's: a result rewritten consistently after it was signed
    fails here. A signature proves who published a file, not that the computation was honest.
    Verdicts are remembered in the user cache folder (KIT_NO_CACHE=1: off; its files are sealed, so an edited cache is ignored); a changed file is
    always checked again, and the same question asked again of files none of which changed prints
    the answer kept.

    \b
    Examples:
      kit verify results/fr/LiquidAI__LFM2.5-350M.json
      kit verify results/ --benchmark data/translations --json
    """
    from kit.cli.replay import AnswerMemo

    memo = AnswerMemo.of_context(click.get_current_context())
    memo.replay()   # the same question of the same files: the kept answer, and exit
    memo.record()
    from kit.results.store import ENVELOPE_SUFFIX, MLLOG_SUFFIX
    from kit.results.verify import verify_paths

    dataset = common.benchmark_or_roster(benchmark)
    outcomes = verify_paths(list(paths), dataset)
    if trusted_keys is not None:
        from kit.results.attest import held_to_keys

        outcomes = held_to_keys(outcomes, common.trusted_keys(trusted_keys))
    # each file and its log (the cache stats them, opening none), its envelope when keys are asked for
    memo.name((p for p, _ in outcomes), beside=MLLOG_SUFFIX)
    if trusted_keys is not None:
        memo.name((p for p, _ in outcomes), beside=ENVELOPE_SUFFIX)
    memo.name_whole(dataset.root if dataset is not None else None)
    bad = [(p, st) for p, st in outcomes if st.state != "complete"]
    # the envelope's list only for --json; the text as one string, so one write: a release tree is thousands of lines
    caveat = NOT_PROVEN_SIGNED if trusted_keys is not None else NOT_PROVEN
    render(Outcome("verify", lambda: [{"path": str(p), "state": st.state, "reasons": st.reasons, "notices": st.notices}
                                      for p, st in outcomes],
                   ("\n".join(_lines(outcomes, len(bad), caveat)),), failed=bool(bad)), as_json, memo)


def _lines(outcomes: list, bad: int, caveat: str = NOT_PROVEN):
    """Each file's verdict (with its notices, or why it failed), then the totals."""
    for p, st in outcomes:
        if st.state == "complete":
            yield visible(f"OK    {p}" + (f"  ({'; '.join(st.notices)})" if st.notices else ""))
        else:
            yield visible(f"FAIL  {p}: {'; '.join(st.reasons)}")
    yield f"{len(outcomes) - bad} verified, {bad} failed"
    yield caveat


