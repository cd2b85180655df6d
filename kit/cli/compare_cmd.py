"""`kit compare`."""

from __future__ import annotations

from pathlib import Path

import click

from kit.cli import common
from kit.cli.outcome import Outcome, render
from kit.errors import visible

SIGNIFICANT = 0.05


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--results", type=click.Path(path_type=Path), default="results", show_default=True,
              help="The results tree holding both runs (run A's when --results-b is given).")
@click.option("--results-b", type=click.Path(path_type=Path), default=None,
              help="Run B's results tree, when it is another (a rerun on another site, engine or GPU).")
@click.option("--resamples", type=int, default=None, help="Bootstrap resamples (default: 2000; 100 to 100000).")
@click.option("--flips", "shown_flips", type=int, default=10, show_default=True,
              help="Flipped items listed in the text output (--json and --html list them all).")
@click.option("--benchmark", type=click.Path(path_type=Path, exists=True), default=None,
              help="The benchmark folder, for the flipped items' sentences. Default: the benchmark the "
                   "roster names (--roster); without either, items are named by id only.")
@click.option("--roster", type=click.Path(path_type=Path, dir_okay=False), default=None, envvar="KIT_ROSTER",
              help="The roster whose `benchmark` gives the sentences. Default: roster.toml here, when there "
                   "is one. Env: KIT_ROSTER.")
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the comparison as one HTML page (the table, every flipped item with its "
                   "sentence and both answers, the method) to this file.")
@common.json_option
def compare(run_a: str, run_b: str, results: Path, results_b: Path | None, resamples: int | None, shown_flips: int,
            benchmark: Path | None, roster: Path | None, html_file: Path | None, as_json: bool) -> None:
    """Compare run A with run B, language by language, on the items both answered.

    For each language and for the macro mean: F1 and accuracy of each run and
    their difference (A minus B) with a 95% paired bootstrap interval (the same
    resampled items score both runs); the exact McNemar test on per-item
    correctness (items only A got right against items only B got right), with
    Holm's correction across languages (* marks p < 0.05 after it); and the items
    whose correctness flips, with both answers and, given the benchmark, the
    sentence. Runs are named as in the roster
    (org/model) or by their file name (org__model). Only complete checkpoints
    count, held to the benchmark when there is one (--benchmark, or the roster's):
    a stale or invalid one, or a language two files claim, is listed as not
    compared, as is a language one run lacks.

    \b
    Examples:
      kit compare org/model-a org/model-b
      kit compare org/model-a org/model-a --results results-a100 --results-b results-v100
      kit compare org/model-a org/model-b --json
      kit compare org/model-a org/model-b --benchmark data --html compare.html
      kit compare kit-demo/tiny-llama kit-demo/tiny-reranker --results kit-demo/results \\
          --roster kit-demo/roster.toml --html kit-demo/compare.html
    """
    from kit.results.identity import PlanExpectations
    from kit.results.kinds.lrb.compare import RESAMPLES, compare_runs

    dataset = common.benchmark_or_roster(benchmark, roster or Path("roster.toml"))
    result = compare_runs(results, run_a, results_b or results, run_b, resamples=RESAMPLES if resamples is None else resamples,
                          sentences=None if dataset is None else _sentences(dataset),
                          benchmark=None if dataset is None else PlanExpectations(dataset))
    data = result.as_dict()
    if html_file is not None:
        from kit.files import write_text_atomic
        from kit.outputs import check_output_file
        from kit.results.html_page import generator_meta
        from kit.results.kinds.lrb.compare_html import comparison_page

        check_output_file(html_file, "comparison page", generator_meta(_GENERATOR).encode("utf-8"),
                          inputs=[results, results_b or results], option="--html")
        write_text_atomic(html_file, comparison_page(result, generator=_GENERATOR))
        data["html"] = str(html_file)
    # a language or item id from a file holds nothing a terminal would act on (escapes, bidi controls)
    lines = _lines(result, shown_flips, html_file, dataset is not None)
    render(Outcome("compare", data, map(visible, lines)), as_json)


def _sentences(dataset):
    """{item id: sentence} of a language of the benchmark (empty for a language it does not define)."""
    def of(language: str) -> dict[str, str]:
        if language not in dataset.languages:
            return {}
        return {item.item_id: getattr(item, "sentence", None) for item in dataset.load_language(language).items}
    return of


def _signed(value: float) -> str:
    return f"{value:+.3f}"


_GENERATOR = "kit compare"   # the page's generator meta: a later --html replaces only such a page


def _lines(result, shown_flips: int, html_file: Path | None, with_sentences: bool):
    """A table of the languages and the macro mean, then what was not compared, the flips and the method."""
    yield f"A = {result.run_a}   B = {result.run_b}"
    yield (f"{'language':<10} {'items':>6}  {'F1 A':>6} {'F1 B':>6}  {'F1 A-B [95% CI]':<24} "
           f"{'acc A-B [95% CI]':<24} {'only A/B right':>14}  p (Holm)")
    for lang in result.languages:
        mark = "*" if lang.p_holm < SIGNIFICANT else " "
        yield (f"{lang.language:<10} {lang.items:>6}  {lang.f1.a:>6.3f} {lang.f1.b:>6.3f}  "
               f"{_interval(lang.f1):<24} {_interval(lang.accuracy):<24} "
               f"{f'{lang.only_a_right} / {lang.only_b_right}':>14}  {lang.p_value:.3g} ({lang.p_holm:.3g}){mark}")
    f1, acc = result.macro_f1, result.macro_accuracy
    items = sum(lang.items for lang in result.languages)
    yield (f"{'macro':<10} {items:>6}  {f1.a:>6.3f} {f1.b:>6.3f}  {_interval(f1):<24} "
           f"{_interval(acc):<24} {f'({len(result.languages)} languages)':>14}")
    for lang, why in result.not_compared.items():
        yield f"not compared: {lang}: {why}"
    if result.flips:
        shown = result.flips[:max(shown_flips, 0)]
        yield f"{len(result.flips)} items flip" + (f"; the first {len(shown)}:" if shown else "")
        for flip in shown:
            right = "A" if flip.predicted_a == flip.expected else "B"
            yield (f"  {flip.language}/{flip.item_id}: label {flip.expected}, A said {flip.predicted_a}, "
                   f"B said {flip.predicted_b} (only {right} right)")
            if flip.sentence is not None:
                yield f"    {_one_line(flip.sentence)}"
        if not with_sentences:
            yield "  (give --benchmark DIR or --roster FILE, whose benchmark it reads, to see each item's sentence)"
    yield f"method: {result.method}"
    if html_file is not None:
        yield f"page: {html_file}"


def _one_line(text: str, width: int = 160) -> str:
    """A sentence on one printable line, cut at `width` characters."""
    flat = " ".join(text.split())
    flat = "".join(ch if ch.isprintable() else "?" for ch in flat)
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def _interval(diff) -> str:
    return f"{_signed(diff.diff)} [{_signed(diff.low)}, {_signed(diff.high)}]"
