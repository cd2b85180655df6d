"""The LightEval kind's part of the HTML report (kit.results.kinds.lighteval): the score table of
lighteval_scores.csv on the index, a table per task, each result's metrics. The values are
kit.results.kinds.lighteval.report's rows."""

from __future__ import annotations

from collections.abc import Sequence

from kit.results import keys
from kit.results.html_page import HtmlParts, PageLinks, key_values, maybe_link, table
from kit.results.records import CheckpointRecord, groups
from kit.results.kinds.lighteval.report import score_rows
from kit.results.tables import rate


def suite_html(records: Sequence[CheckpointRecord], links: PageLinks) -> HtmlParts:
    """The LightEval sections of the HTML report for these records (complete ones counted)."""
    valid = [r for r in records if r.valid]
    name_of = {(r.run, r.language): r.name for r in valid}
    rows = score_rows(valid)
    scores = table(
        ("task", "run", "lighteval_task", keys.MODEL_REVISION, keys.N_ITEMS, "metric", "value"),
        ([maybe_link(links.language(row["task"]), row["task"]),
          maybe_link(links.result(name_of[(row["run"], row["task"])]), row["run"]), row["lighteval_task"],
          row[keys.MODEL_REVISION], row[keys.N_ITEMS], row["metric"], row["value"]] for row in rows))
    index = ("<h2>Scores</h2>\n<p>Each task metric is the mean of its per-item values (as lighteval_scores.csv); "
             "tasks link to their tables, runs to their results.</p>\n" + scores)

    page_links = links.from_page()
    tasks = {}
    for task, group in groups(valid, lambda r: r.language):
        metrics = sorted({k for r in group for k in r.metrics if k != keys.N_ITEMS})
        tasks[task] = table(("run", keys.N_ITEMS, *metrics),
                            ([maybe_link(page_links.result(r.name), r.run), str(r.metrics.get(keys.N_ITEMS)),
                              *(rate(r.metrics.get(m)) for m in metrics)] for r in sorted(group, key=lambda r: r.run)),
                            caption=f"task {task}: every counted run")
    results = {r.name: key_values([(keys.N_ITEMS, r.metrics.get(keys.N_ITEMS)),
                                   ("lighteval_task", r.metadata.get("lighteval_task")),
                                   *((m, rate(r.metrics[m])) for m in sorted(r.metrics) if m != keys.N_ITEMS)],
                                  caption="task metrics (means of the item values, rounded to 4 decimals)")
               for r in valid}
    return HtmlParts("kit report (LightEval suite)", index, tasks, results)
