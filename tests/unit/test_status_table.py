"""`kit status`'s text tables: a sweep just planned (thousands of pending pairs) gets its run table and
the pairs that need a look first, 50 at most, with how many more there are and where to see them."""

from __future__ import annotations

from pathlib import Path

from kit.cli.status_cmd import LISTED, _print_tables
from kit.plan import Pair
from kit.results.status import PairStatus, count_states


def statuses(pending: int, invalid: int) -> list[PairStatus]:
    out = [PairStatus(Pair(f"org/model-{i % 7}", f"l{i:04d}"), "pending", Path(f"r/l{i:04d}/x.json"))
           for i in range(pending)]
    out += [PairStatus(Pair("org/broken", f"b{i:03d}"), "invalid", Path(f"r/b{i:03d}/x.json"), ["metrics edited"])
            for i in range(invalid)]
    return out


def _rows(text: str, marker: str) -> int:
    return sum(1 for line in text.splitlines() if marker in line)


def test_a_planned_sweep_lists_the_pairs_that_need_a_look_first_and_says_how_many_more(capsys):
    found = statuses(pending=400, invalid=3)
    _print_tables("kit status r", found, count_states(found), False, None, Path("r"))
    out = capsys.readouterr().out
    assert _rows(out, "metrics edited") == 3                 # all of them, listed first
    assert out.index("metrics edited") < out.index(" l0000 ")
    assert _rows(out, "│ pending") == LISTED - 3
    assert f"... and {400 + 3 - LISTED} more pairs not complete" in out and "--pairs" in out
    assert "403 pairs: 3 invalid, 400 pending" in out


def test_every_pair_is_listed_with_pairs_and_a_short_list_says_nothing_more(capsys):
    found = statuses(pending=120, invalid=0)
    _print_tables("kit status r", found, count_states(found), True, None, Path("r"))
    assert _rows(capsys.readouterr().out, "│ pending") == 120
    few = statuses(pending=5, invalid=1)
    _print_tables("kit status r", few, count_states(few), False, None, Path("r"))
    out = capsys.readouterr().out
    assert _rows(out, "│ pending") == 5 and "more pairs not complete" not in out
