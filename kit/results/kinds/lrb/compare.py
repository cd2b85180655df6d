"""`kit compare A B`: is run A's score different from run B's beyond what the items' luck explains?

Two runs of one lrb benchmark are compared on the items both answered, language by language:
- the difference in F1 and accuracy (A minus B) with a paired percentile bootstrap interval: each
  draw resamples the items once and scores both runs on the same draw (kit.results.kinds.lrb.paired),
  so the interval is of the difference itself (a run's two unpaired intervals overlap far more often than the difference is
  doubtful); the macro difference resamples every language on its own and takes the mean over the
  languages, as the leaderboard does;
- the exact McNemar test on per-item correctness (an item is correct when its verdict is its label;
  unparsed is wrong): the items only A got right against those only B got right, a two-sided exact
  binomial test at 1/2 (summed exactly in integers: the p-value scipy.stats.binomtest gives, without
  importing SciPy's 70 MB into every report), with Holm's correction across the languages;
- the items whose correctness flips, with both answers (and the sentence, given the benchmark).

Both runs' checkpoints are validated (the evidence policy, kit.results.evidence) and only complete
ones count; a language either run lacks, or where the two disagree on an item's label, is listed as
not compared, with why.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.config.names import run_file_stem, run_from_stem
from kit.errors import ConfigError
from kit.results import keys
from kit.results.intervals import CONFIDENCE

if TYPE_CHECKING:
    from kit.results.identity import PlanExpectations
from kit.results.kinds.lrb.paired import (CELL_INDEX, joint_counts, macro_draws, paired_language,
                                          percentile_interval, seed)
from kit.results.metrics import confusion_cell, verdict

RESAMPLES = 2000
METHOD = (f"{CONFIDENCE:.0%} paired percentile bootstrap over item ids ({{resamples}} resamples, seeded by the "
          "two runs and the language; the macro difference resamples each language and takes the mean over "
          "languages); exact McNemar test on per-item correctness (two-sided binomial test at 1/2 on the items "
          "one run alone got right, summed exactly), Holm-corrected across languages")


@dataclass(frozen=True, slots=True)   # a report of a sweep holds tens of thousands
class Difference:
    """A score of A, of B, A minus B and the interval of the difference (low, high)."""

    a: float
    b: float
    diff: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        """JSON-ready form."""
        return {"a": self.a, "b": self.b, "diff": self.diff, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Flip:
    """An item one run got right and the other wrong."""

    language: str
    item_id: str
    expected: str
    predicted_a: str
    predicted_b: str
    answer_a: str | None
    answer_b: str | None
    sentence: str | None = None     # the benchmark's sentence, when the benchmark was at hand

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


@dataclass(frozen=True, slots=True)   # a report of a sweep holds tens of thousands
class LanguageComparison:
    """One language: the paired items' count, the F1 and accuracy differences, McNemar's counts (items
    only A got right, only B got right) and p-values (raw and Holm-corrected)."""

    language: str
    items: int
    f1: Difference
    accuracy: Difference
    only_a_right: int
    only_b_right: int
    p_value: float
    p_holm: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"language": self.language, "items": self.items, "f1": self.f1.as_dict(),
                "accuracy": self.accuracy.as_dict(), "only_a_right": self.only_a_right,
                "only_b_right": self.only_b_right, "p_value": self.p_value, "p_holm": self.p_holm}


@dataclass
class Comparison:
    """The comparison of run A with run B."""

    run_a: str
    run_b: str
    languages: list[LanguageComparison]
    macro_f1: Difference | None
    macro_accuracy: Difference | None
    not_compared: dict[str, str] = field(default_factory=dict)   # language -> why
    flips: list[Flip] = field(default_factory=list)
    resamples: int = RESAMPLES
    method_text: str | None = None   # another method's sentence (the report's normal intervals)

    @property
    def method(self) -> str:
        """How the intervals and tests were made, in one sentence."""
        return self.method_text or METHOD.format(resamples=self.resamples)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"run_a": self.run_a, "run_b": self.run_b, "method": self.method,
                "macro": {"f1": self.macro_f1.as_dict() if self.macro_f1 else None,
                          "accuracy": self.macro_accuracy.as_dict() if self.macro_accuracy else None,
                          "languages": len(self.languages)},
                "languages": [lang.as_dict() for lang in self.languages],
                "not_compared": self.not_compared, "flips": [f.as_dict() for f in self.flips]}


MIN_RESAMPLES = 100
MAX_RESAMPLES = 100_000


def compare_runs(results_a: Path, run_a: str, results_b: Path, run_b: str, resamples: int = RESAMPLES,
                 sentences: Callable[[str], Mapping[str, str]] | None = None,
                 benchmark: "PlanExpectations | None" = None) -> Comparison:
    """Compare run A (in RESULTS_A) with run B (in RESULTS_B, which may be the same tree); each
    flipped item gets its sentence from `sentences(language)` ({item id: sentence}) when given. A
    ConfigError when either run has no complete checkpoint or they share no language."""
    if resamples < MIN_RESAMPLES:
        raise ConfigError(f"--resamples {resamples} is too few for a 95% interval (at least {MIN_RESAMPLES})",
                          fix=f"use {RESAMPLES} (the default), or at least 1000 for percentiles that hold still")
    if resamples > MAX_RESAMPLES:   # each resample is a row of every language's items in memory
        raise ConfigError(f"--resamples {resamples} is more than {MAX_RESAMPLES:,}: the interval would not move, "
                          "and the draws would not fit in memory", fix=f"use {RESAMPLES} (the default) up to {MAX_RESAMPLES}")
    # org__model and org/model name one run; its files say its name (a model id may hold "__")
    run_a, found_a, bad_a = _run_predictions(results_a, run_a, benchmark)
    run_b, found_b, bad_b = _run_predictions(results_b, run_b, benchmark)
    # one collection compared: the tree's own files, or the one batch folder both runs lie in; a batch's
    # copy of a language is never pooled into the macro with the tree's own (kit report keeps batches apart)
    # (the files not counted are each run's too: a batch where one run's file is invalid is still the
    # batch compared, and that file's fault is what the user is told)
    chosen, aside = _one_collection({**found_a, **bad_a}, {**found_b, **bad_b})
    found_a = {lang: data for lang, data in found_a.items() if _collection(lang) == chosen}
    found_b = {lang: data for lang, data in found_b.items() if _collection(lang) == chosen}
    not_compared = {lang: f"A's checkpoint is not counted: {why}" for lang, why in bad_a.items()}
    not_compared.update(aside)
    not_compared.update({lang: f"B's checkpoint is not counted: {why}" for lang, why in bad_b.items()
                         if lang not in not_compared})
    for lang in sorted(set(found_a) ^ set(found_b)):
        if lang not in not_compared:
            not_compared[lang] = f"only {'A' if lang in found_a else 'B'} has a complete checkpoint"
    languages: list[LanguageComparison] = []
    flips: list[Flip] = []
    draws_f1, draws_acc = [], []
    for lang in sorted(set(found_a) & set(found_b)):
        paired = _pair_items(found_a[lang], found_b[lang])
        if isinstance(paired, str):
            not_compared[lang] = paired
            continue
        ids, expected, pred_a, pred_b, answers = paired
        result, f1_draws, acc_draws = _compare_language(lang, (run_a, run_b), expected, pred_a, pred_b, resamples)
        languages.append(result)
        draws_f1.append(f1_draws)
        draws_acc.append(acc_draws)
        text = sentences(lang) if sentences is not None else {}
        flips.extend(Flip(lang, i, e, a, b, *answers.get(i, (None, None)), text.get(i))
                     for i, e, a, b in zip(ids, expected, pred_a, pred_b) if (a == e) != (b == e))
    if not languages:
        reasons = "; ".join(f"{lang}: {why}" for lang, why in sorted(not_compared.items())) or "no checkpoints"
        raise ConfigError(f"runs {run_a!r} and {run_b!r} share no language with complete checkpoints ({reasons})",
                          fix="check both run names with `kit status`; a run is named as in the roster or by its "
                              "file name (org__model)")
    languages = [replace(lang, p_holm=p) for lang, p in zip(languages, holm([lang.p_value for lang in languages]))]
    macro_f1 = macro_difference([lang.f1 for lang in languages], draws_f1)
    macro_acc = macro_difference([lang.accuracy for lang in languages], draws_acc)
    return Comparison(run_a, run_b, languages, macro_f1, macro_acc, dict(sorted(not_compared.items())), flips,
                      resamples)


def checkpoint_comparison(language: str, a: Mapping[str, Any], b: Mapping[str, Any], seed_parts: tuple[str, str],
                          resamples: int = RESAMPLES) -> LanguageComparison | str:
    """Two checkpoints of one language's items compared (A minus B, as `kit compare` does one language:
    the paired bootstrap interval of the F1 and accuracy differences, seeded by `seed_parts` and the
    language, and the exact McNemar p-value), or why they cannot be (no shared item, another label)."""
    paired = _pair_items(a, b)
    if isinstance(paired, str):
        return paired
    _ids, expected, pred_a, pred_b, _answers = paired
    return _compare_language(language, seed_parts, expected, pred_a, pred_b, resamples)[0]


@lru_cache(maxsize=1 << 16)   # a report asks for every checkpoint against its language's top run: few counts repeat
def mcnemar_exact(only_a_right: int, only_b_right: int) -> float:
    """The two-sided exact McNemar p-value: a binomial test of `only_a_right` out of the discordant
    items at probability 1/2 (1.0 when no item is discordant). At 1/2 the distribution is symmetric, so
    the two-sided p is twice the smaller tail, at most 1; the tail is summed in integers and divided
    once, so the float is the correctly rounded exact value."""
    n = only_a_right + only_b_right
    smaller = min(only_a_right, only_b_right)
    if n == 0 or 2 * smaller == n:
        return 1.0
    term = tail = 1   # C(n, 0)
    for i in range(1, smaller + 1):
        term = term * (n - i + 1) // i   # C(n, i) from C(n, i - 1), exact
        tail += term
    return min(1.0, (2 * tail) / (1 << n))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the given order (each at most 1, never below an earlier
    one in ascending order)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _compare_language(lang: str, runs: tuple[str, str], expected: list[str], pred_a: list[str], pred_b: list[str],
                      resamples: int) -> tuple[LanguageComparison, Any, Any]:
    """One language's differences, McNemar counts and p-value, and the bootstrap draws of the F1 and
    accuracy differences (for the macro interval)."""
    joint = joint_counts((CELL_INDEX[confusion_cell(e, p)] for e, p in zip(expected, pred_a)),
                         (CELL_INDEX[confusion_cell(e, p)] for e, p in zip(expected, pred_b)))
    return language_comparison(lang, joint, resamples, seed(*runs, lang))


def language_comparison(lang: str, joint: Sequence[int], resamples: int,
                        rng_seed: int) -> tuple[LanguageComparison, Any, Any]:
    """A language's comparison from its 25 joint cell counts (kit.results.kinds.lrb.paired), with the
    bootstrap draws of its F1 and accuracy differences (for a macro interval)."""
    fig = paired_language(joint, resamples, rng_seed)
    result = LanguageComparison(lang, fig.items, _difference(fig.f1_a, fig.f1_b, fig.f1_draws),
                                _difference(fig.accuracy_a, fig.accuracy_b, fig.accuracy_draws),
                                fig.only_a_right, fig.only_b_right, mcnemar_exact(fig.only_a_right, fig.only_b_right))
    return result, fig.f1_draws, fig.accuracy_draws


def _difference(a: float, b: float, draws) -> Difference:
    return Difference(a, b, a - b, *percentile_interval(draws))


def macro_difference(diffs: list[Difference], draws: list[Any]) -> Difference:
    """The mean over languages of A, B and their difference, with the interval of the mean of each
    draw's language differences (draws in the languages' order)."""
    a = sum(d.a for d in diffs) / len(diffs)
    b = sum(d.b for d in diffs) / len(diffs)
    return _difference(a, b, macro_draws(draws))


def _pair_items(a: Mapping[str, Any], b: Mapping[str, Any]):
    """(ids, expected, A's verdicts, B's verdicts, {id: (A's answer, B's answer)}) over the items both
    checkpoints hold, or why the language cannot be compared."""
    items_a, items_b = _items(a), _items(b)
    common = sorted(set(items_a) & set(items_b))
    if not common:
        return "the two checkpoints share no item id"
    clash = next((i for i in common if items_a[i][keys.EXPECTED] != items_b[i][keys.EXPECTED]), None)
    if clash is not None:
        return f"item {clash!r} has another label in each checkpoint (different benchmark data)"
    expected = [items_a[i][keys.EXPECTED] for i in common]
    pred_a = [verdict(items_a[i].get(keys.PREDICTED)) for i in common]
    pred_b = [verdict(items_b[i].get(keys.PREDICTED)) for i in common]
    answers = {i: (items_a[i].get(keys.RAW_OUTPUT), items_b[i].get(keys.RAW_OUTPUT)) for i in common}
    return common, expected, pred_a, pred_b, answers


def _items(data: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {item[keys.ITEM_ID]: item for item in data.get(keys.PREDICTIONS) or []}


def _run_predictions(results: Path, run: str, benchmark: "PlanExpectations | None" = None
                     ) -> tuple[str, dict[str, Mapping[str, Any]], dict[str, str]]:
    """(the run's name as its files record it, {language: checkpoint data} of RUN's complete checkpoints
    under RESULTS, {language: why not counted} of its others). RUN is the roster's run name or the file
    name's stem. A language is the one
    kit.results.store.file_language gives (und for an lrb file recording none), with its batch folder
    in brackets when the file lies in one ("und (strict-8-tokens)"). With `benchmark`, each file is held
    to it by the rule every command follows (kit.results.benchmark_rule): a stale one is not counted.
    Two files that count for one language are neither counted: which one the comparison means is unknown."""
    from kit.results.benchmark_rule import validate_held
    from kit.results.checkpoint import validate_checkpoint
    from kit.results.store import collection_of, file_language, iter_checkpoint_files
    from kit.results.records import file_run

    results = Path(results)
    if not results.is_dir():
        what = "is not a folder" if os.path.lexists(results) else "does not exist"
        raise ConfigError(f"results folder {str(results)!r} {what}",
                          fix="point at the folder holding <language>/<run>.json checkpoints")
    found: dict[str, Mapping[str, Any]] = {}
    bad: dict[str, str] = {}
    where: dict[str, Path] = {}
    stem = run_file_stem(run)
    paths = [path for path in iter_checkpoint_files(results) if path.stem == stem]
    names = []
    states = validate_held([(path, results) for path in paths],
                           lambda jobs: [validate_checkpoint(p, **kwargs) for p, kwargs in jobs], benchmark)
    for path, state in zip(paths, states):
        # the language every command counts the file for (lrb's files without one: und), within its
        # collection (a batch folder is its own leaderboard, never a language)
        language = file_language(results, path, (state.data or {}).get(keys.METADATA))
        collection = collection_of(results, path, language)
        if collection:
            language = f"{language} ({collection})"
        if language in where:   # a second file for it
            found.pop(language, None)
            bad[language] = f"two files count for it: {where[language]} and {path}"
            continue
        where[language] = path
        if state.state == keys.PairState.COMPLETE and state.data is not None:
            if _kind(state.data) != keys.KIND_LRB:
                raise ConfigError(f"{path}: kit compare compares lrb checkpoints (yes/no items), not "
                                  f"{_kind(state.data)} ones", fix="compare two runs of an lrb benchmark")
            found[language] = state.data
            names.append(file_run(path, state.data.get(keys.METADATA)))
        else:
            bad[language] = f"{state.state}: " + ("; ".join(state.reasons) or state.state)
    if not found and not bad:
        raise ConfigError(f"no checkpoint of run {run!r} under {results}",
                          fix="name the run as the roster does (org/model) or by its file name (org__model); "
                              "`kit status` lists them")
    return (names[0] if names else run_from_stem(stem)), found, bad


def _collection(language: str) -> str:
    """The batch folder of a compared language key ("en (new-models)" -> "new-models"; "en" -> "")."""
    m = re.fullmatch(r".+ \((.+)\)", language)
    return m.group(1) if m else ""


def _one_collection(found_a: Mapping[str, Any], found_b: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """(the collection compared, {language key: why not compared} for the others): the tree's own when
    both runs have files there, else the one batch folder both lie in."""
    of_a, of_b = {_collection(k) for k in found_a}, {_collection(k) for k in found_b}
    shared = sorted(of_a & of_b)
    chosen = "" if "" in shared or len(shared) != 1 else shared[0]
    what = f"the batch folder {chosen}" if chosen else "the tree's own files"
    aside = {lang: f"in the batch folder {_collection(lang)}, while {what} are compared: compare that folder on its "
                   f"own (--results RESULTS/{_collection(lang)})" if _collection(lang) else
                   f"in the tree's own files, while {what} are compared"
             for lang in (*found_a, *found_b) if _collection(lang) != chosen}
    return chosen, aside


def _kind(data: Mapping[str, Any]) -> object:
    from kit.results.kinds import kind_name

    return kind_name(data)
