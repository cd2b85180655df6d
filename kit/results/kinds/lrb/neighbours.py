"""Which neighbouring ranks of an lrb leaderboard the items tell apart.

For each run and the one ranked just below it, on the languages both have with the same items and
labels (kit.results.kinds.lrb.paired.item_outcomes digests): per language, the paired F1 and
accuracy differences with 95% normal (delta-method) intervals of resampling the items, the exact
McNemar test on per-item correctness with Holm's correction across the languages; for the macro mean
over those languages, the F1 difference and its interval. Two neighbours are distinguishable when
that macro interval excludes zero. The normal interval costs one pass over each language's 25 joint
cells, so every neighbouring pair of a release-size leaderboard is marked at the cost of reading it;
`kit compare A B` gives the paired bootstrap of the same differences and names the flipped items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from operator import is_
from statistics import NormalDist

from kit.results import keys
from kit.results.intervals import CONFIDENCE
from kit.results.kinds.lrb.compare import Comparison, Difference, LanguageComparison, holm, mcnemar_exact
from kit.results.kinds.lrb.paired import CELLS, discordant, joint_of_outcomes, marginals, normal_differences
from kit.results.metrics import metrics_of_counts
from kit.results.records import CheckpointRecord, groups

_Z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)
METHOD = (f"{CONFIDENCE:.0%} normal (delta-method) interval of the paired difference, resampling the items both "
          "runs answered; the macro difference is the mean over the languages both runs have with the same "
          "items, its variance the sum of theirs over the count squared; exact McNemar test on per-item "
          "correctness (two-sided binomial test at 1/2, summed exactly), Holm-corrected across "
          "languages; kit compare gives the paired bootstrap and the flipped items")


@dataclass(frozen=True)
class NeighbourComparison:
    """Rank `rank` (1-based) against rank `rank + 1`, and whether the items tell them apart."""

    rank: int
    comparison: Comparison

    @property
    def distinguishable(self) -> bool:
        """The macro F1 difference's interval excludes zero."""
        macro = self.comparison.macro_f1
        return macro is not None and (macro.low > 0 or macro.high < 0)


def neighbour_comparisons(valid: Sequence[CheckpointRecord], run_order: Sequence[str]) -> list[NeighbourComparison]:
    """The comparison of each run in `run_order` (the leaderboard's) with the next one, from the
    records' item outcomes (records without them are listed as not compared). The last answer is kept
    for the same records (the same objects) and order: a report's CSV files and its HTML ask in turn."""
    if _LAST and _LAST[1] == list(run_order) and len(_LAST[0]) == len(valid) and all(map(is_, _LAST[0], valid)):
        return _LAST[2]
    by_run: dict[str, Mapping[str, CheckpointRecord]] = {
        run: {r.language: r for r in group} for run, group in groups(list(valid), lambda r: r.run)}
    found = [NeighbourComparison(rank, compare_outcomes(a, by_run.get(a, {}), b, by_run.get(b, {})))
             for rank, (a, b) in enumerate(zip(run_order, run_order[1:]), 1)]
    _LAST[:] = [list(valid), list(run_order), found]
    return found


_LAST: list = []   # [records, run order, comparisons] of the last call (records are frozen: their outcomes hold)


def compare_outcomes(run_a: str, records_a: Mapping[str, CheckpointRecord], run_b: str,
                     records_b: Mapping[str, CheckpointRecord]) -> Comparison:
    """Run A against run B over their languages' item outcomes (no flipped items: they name no ids)."""
    not_compared: dict[str, str] = {}
    languages: list[LanguageComparison] = []
    variances_f1: list[float] = []
    variances_acc: list[float] = []
    for lang in sorted(set(records_a) | set(records_b)):
        a, b = records_a.get(lang), records_b.get(lang)
        if a is None or b is None:
            not_compared[lang] = f"only {'A' if b is None else 'B'} has a complete checkpoint"
            continue
        if a.outcomes is None or b.outcomes is None:
            not_compared[lang] = "the items' outcomes were not read"
            continue
        if a.outcomes[0] != b.outcomes[0]:
            not_compared[lang] = "the two checkpoints hold other items or labels (different benchmark data)"
            continue
        joint = joint_of_outcomes(a.outcomes[1], b.outcomes[1])
        result, var_f1, var_acc = _language(lang, joint)
        languages.append(result)
        variances_f1.append(var_f1)
        variances_acc.append(var_acc)
    languages = [replace(lang, p_holm=p) for lang, p in zip(languages, holm([lang.p_value for lang in languages]))]
    macro_f1 = _macro([lang.f1 for lang in languages], variances_f1)
    macro_acc = _macro([lang.accuracy for lang in languages], variances_acc)
    return Comparison(run_a, run_b, languages, macro_f1, macro_acc, not_compared, [], resamples=0, method_text=METHOD)


def _language(lang: str, joint: Sequence[int]) -> tuple[LanguageComparison, float, float]:
    """One language's comparison from its joint cells, with the variances of its two differences."""
    n = sum(joint)
    _, var_f1, _, var_acc = normal_differences(joint)
    metrics_a, metrics_b = (metrics_of_counts(dict(zip(CELLS, cells))) for cells in marginals(joint))
    only_a, only_b = discordant(joint)
    return (LanguageComparison(lang, n, _normal(metrics_a[keys.F1], metrics_b[keys.F1], var_f1),
                               _normal(metrics_a[keys.ACCURACY], metrics_b[keys.ACCURACY], var_acc),
                               only_a, only_b, mcnemar_exact(only_a, only_b)), var_f1, var_acc)


def _normal(a: float, b: float, variance: float) -> Difference:
    half = _Z * math.sqrt(variance)
    return Difference(a, b, a - b, a - b - half, a - b + half)


def _macro(diffs: Sequence[Difference], variances: Sequence[float]) -> Difference | None:
    if not diffs:
        return None
    count = len(diffs)
    return _normal(math.fsum(d.a for d in diffs) / count, math.fsum(d.b for d in diffs) / count,
                   math.fsum(variances) / count ** 2)
