"""The typed read of lrb checkpoints (kit.results.kinds.lrb.typed, msgspec): a fast path for the batch
readers (status, verify, report) that must give exactly the state the full path gives, for sound files
and for every fault and hostile text, and that is taken for sound files (issue 33)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest_checkpoints import LRB_FILES, dump, make_checkpoint, predictions_of, seal
from test_safejson import EDGES, values   # the texts where Python's parser and a C parser may part ways
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.results import checkpoint as checkpoint_mod
from kit.results import keys
from kit.results.checkpoint import _typed_summary, validate_checkpoint, validate_summary, without_predictions
from kit.results.identity import Expected
from kit.results.kinds.lrb import typed as typed_mod
from kit.results.metrics import compute_metrics

msgspec = pytest.importorskip("msgspec")   # kit's `fast` extra, which scripts/venv.sh installs

Y, N, U = keys.YES, keys.NO, keys.UNPARSED
RUN, LANGUAGE = "org/model", "fr"
PAIRS = [(Y, Y), (N, N), (Y, N), (N, Y), (Y, U), (N, N)]


def full_path(path: Path, outcomes: bool, **kwargs) -> object:
    """What validate_summary must equal: the full path, predictions dropped."""
    return without_predictions(validate_checkpoint(path, **kwargs), outcomes=outcomes)


def expectations(data: dict) -> list[dict]:
    """validate keyword sets: none, the run and language, the benchmark's ids and answers (its own, and
    another's), today's identity (the file's own, and another run's: stale)."""
    items = data[keys.PREDICTIONS] if isinstance(data.get(keys.PREDICTIONS), list) else []
    ids = tuple(p.get(keys.ITEM_ID) for p in items if isinstance(p, dict))
    answers = {p.get(keys.ITEM_ID): p.get(keys.EXPECTED) for p in items if isinstance(p, dict)}
    metadata = data.get(keys.METADATA) if isinstance(data.get(keys.METADATA), dict) else {}
    own = {keys.MODEL_ID: metadata.get(keys.MODEL_ID)}
    return [
        {},
        {"run": RUN, "language": LANGUAGE},
        {"expect": Expected(item_ids=ids, answers=answers, identity=own)},
        {"expect": Expected(item_ids=ids[::-1], answers=answers)},
        {"expect": Expected(item_ids=None, answers={k: (N if v == Y else Y) for k, v in answers.items()})},
        {"expect": Expected(identity={keys.MODEL_ID: "org/other"})},
    ]


def assert_same_state(path: Path, data: dict) -> None:
    for kwargs in expectations(data):
        for outcomes in (False, True):
            assert validate_summary(path, outcomes=outcomes, **kwargs) == full_path(path, outcomes, **kwargs), \
                (kwargs, outcomes)


def base_checkpoint(root: Path, pairs=PAIRS) -> Path:
    return make_checkpoint(root, RUN, LANGUAGE, predictions_of(pairs))


def score_checkpoint(root: Path, threshold: object = 0.5) -> Path:
    """A score run's checkpoint as the worker writes one (verdict: yes-score against the threshold)."""
    items = []
    for i, (expected, yes) in enumerate([(Y, 0.9), (N, 0.2), (Y, 0.4), (N, 0.5)]):
        items.append({keys.ITEM_ID: f"s-{i}", keys.EXPECTED: expected, keys.PREDICTED: Y if yes >= 0.5 else N,
                      keys.RAW_OUTPUT: repr(yes), keys.TRUNCATED: False, keys.PARSE_MODE: keys.PARSE_SCORE,
                      keys.SCORE_YES: yes, keys.SCORE_NO: 1 - yes, keys.NATIVE_SCORE: yes})
    path = make_checkpoint(root, RUN, LANGUAGE, items)
    data = json.loads(path.read_text())
    data[keys.METADATA][keys.TASK] = keys.TASK_SCORE
    data[keys.METADATA][keys.OPTIONS] = {"threshold": threshold}
    path.write_text(dump(data))
    return seal(path)


def _recompute(data: dict) -> None:
    data[keys.METRICS] = compute_metrics(data[keys.PREDICTIONS])


def _item(index: int, **changes):
    def change(data: dict) -> None:
        data[keys.PREDICTIONS][index].update(changes)
    return change


def _recomputed(change):
    def both(data: dict) -> None:
        change(data)
        _recompute(data)
    return both


def _set(section: str, key: str, value: object):
    def change(data: dict) -> None:
        data[section][key] = value
    return change


def _nested(depth: int):
    def change(data: dict) -> None:
        value: object = 1
        for _ in range(depth):
            value = [value]
        data[keys.METADATA]["deep"] = value
    return change


LONG = "Let me think. " * 30 + "Answer: yes"

# name -> change to a sound kit checkpoint's data (each either keeps it sound or gives it a fault)
CHANGES = {
    "sound": lambda data: None,
    "verdict edited": _item(1, predicted=Y),
    "verdict and metrics edited": _recomputed(_item(1, predicted=Y, raw_output=N)),
    "metric edited": _set(keys.METRICS, keys.F1, 0.123),
    "duplicate id": _recomputed(_item(1, item_id="item-000")),
    "no predictions": _recomputed(lambda data: data[keys.PREDICTIONS].clear()),
    "unknown item field": _item(0, note="kept by lrb"),
    "unknown section": lambda data: data.__setitem__("extra", {"a": 1}),
    "expected not a label": _item(0, expected="maybe"),
    "lrb's null verdict": _recomputed(_item(4, predicted=None, raw_output="nothing")),
    "truncated and unparsed": _recomputed(_item(0, truncated=True, predicted=U, raw_output="yes",
                                                parse_mode=keys.PARSE_TRUNCATED)),
    "truncated yet a verdict": _recomputed(_item(0, truncated=True)),
    "truncated null": _item(0, truncated=None),
    "truncated text": _item(0, truncated="no"),
    "a long answer": _recomputed(_item(0, raw_output=LONG, predicted=Y)),
    "a long answer, a short one edited": _recomputed(lambda data: (_item(0, raw_output=LONG, predicted=Y)(data),
                                                                   _item(1, predicted=Y)(data))),
    "answer null": _item(0, raw_output=None),
    "answer not text": _item(0, raw_output=["yes"]),
    "score mode in a generate run": _item(0, parse_mode=keys.PARSE_SCORE),
    "odd parse mode": _item(0, parse_mode="guessed"),
    "empty id": _item(0, item_id=""),
    "id not text": _item(0, item_id=7),
    "seed at the 64-bit limit": _set(keys.METADATA, keys.SEED, 2**63 - 1),
    "seed past 64 bits": _set(keys.METADATA, keys.SEED, 2**63),
    "seed of 30 digits": _set(keys.METADATA, keys.SEED, 10**30),
    "a big integer deep in provenance": lambda data: data[keys.PROVENANCE].setdefault("job", {}).update(n=[[-2**64]]),
    "nested 60 deep": _nested(60),
    "nested 70 deep": _nested(70),
    "another language": _set(keys.METADATA, keys.LANGUAGE, "de"),
    "another run": _set(keys.METADATA, keys.RUN, "org/other"),
    "metadata edited against provenance": _set(keys.METADATA, keys.MODEL_ID, "org/else"),
    "another kind": _set(keys.METADATA, keys.BENCHMARK_KIND, keys.KIND_LIGHTEVAL),
    "unknown kind": _set(keys.METADATA, keys.BENCHMARK_KIND, "mystery"),
    "negative duration": _set(keys.METADATA, keys.DURATION_SECONDS, -1),
    "text seed": _set(keys.METADATA, keys.SEED, "0"),
    "no provenance": lambda data: data.pop(keys.PROVENANCE),
    "provenance not an object": lambda data: data.__setitem__(keys.PROVENANCE, [1]),
    "metrics not an object": lambda data: data.__setitem__(keys.METRICS, [1]),
    "speed section": lambda data: data.__setitem__(keys.SPEED, {"items_per_second": 12.5}),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_the_typed_read_gives_the_full_paths_state(tmp_path, name):
    path = base_checkpoint(tmp_path / "results")
    data = json.loads(path.read_text())
    CHANGES[name](data)
    path.write_text(dump(data))
    assert_same_state(path, data)


@pytest.mark.parametrize("name", ["sound", "truncated and unparsed", "a long answer",
                                  "seed at the 64-bit limit", "nested 60 deep", "speed section", "truncated null"])
def test_sound_files_are_read_by_the_typed_path(tmp_path, name):
    path = base_checkpoint(tmp_path / "results")
    data = json.loads(path.read_text())
    CHANGES[name](data)
    path.write_text(dump(data))
    state = _typed_summary(path, RUN, LANGUAGE, None, True)
    assert state is not None and state.complete
    assert state == full_path(path, True, run=RUN, language=LANGUAGE)


@pytest.mark.parametrize("name", ["verdict edited", "seed past 64 bits", "nested 70 deep", "unknown item field",
                                  "another kind", "duplicate id"])
def test_faulty_or_doubtful_files_go_to_the_full_path(tmp_path, name):
    path = base_checkpoint(tmp_path / "results")
    data = json.loads(path.read_text())
    CHANGES[name](data)
    path.write_text(dump(data))
    assert _typed_summary(path, None, None, None, False) is None


# texts Python's parser and msgspec may read differently: each must end in the full path's state
RAW_TEXTS = {
    "NaN metric": lambda text: text.replace('"f1": ', '"f1": NaN, "x": ', 1),
    "infinite literal": lambda text: text.replace('"seed"', '"huge": 1e400, "seed"', 1),
    "byte order mark": lambda text: "\ufeff" + text,
    "trailing text": lambda text: text + "x",
    "lone surrogate": lambda text: text.replace('"raw_output": "yes"', '"raw_output": "\\ud800"', 1),
    "a key twice, the last kept": lambda text: text.replace('"predicted": "yes"', '"predicted": "no", "predicted": "yes"', 1),
    "a section twice": lambda text: text.replace('"metadata": {', '"metadata": {"run": "x"}, "metadata": {', 1),
    "a 25-digit integer": lambda text: text.replace('"seed"', '"big": 1234567890123456789012345, "seed"', 1),
    "exponent integer": lambda text: text.replace('"seed"', '"e": 1E2, "seed"', 1),
    "control character": lambda text: text.replace('"raw_output": "yes"', '"raw_output": "ye\ts"', 1),
    "not UTF-8": lambda text: text.replace('"raw_output": "yes"', '"raw_output": "y\udcffs"', 1),
}


@pytest.mark.parametrize("name", list(RAW_TEXTS))
def test_hostile_texts_give_the_full_paths_state(tmp_path, name):
    path = base_checkpoint(tmp_path / "results")
    data = json.loads(path.read_text())
    data[keys.METADATA][keys.SEED] = 0
    text = RAW_TEXTS[name](dump(data))
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert_same_state(path, data)


@pytest.mark.parametrize("threshold", [0.5, 0.3, "half", True])
def test_score_runs_give_the_full_paths_state(tmp_path, threshold):
    path = score_checkpoint(tmp_path / "results", threshold)
    data = json.loads(path.read_text())
    assert_same_state(path, data)
    rewritten = dict(data, predictions=[dict(p, score_yes=1) for p in data[keys.PREDICTIONS]])
    path.write_text(dump(rewritten))
    assert_same_state(path, rewritten)
    path.write_text(dump(dict(data, predictions=[dict(p, score_yes=True) for p in data[keys.PREDICTIONS]])))
    assert_same_state(path, data)


def test_a_sound_score_run_is_read_by_the_typed_path(tmp_path):
    path = score_checkpoint(tmp_path / "results")
    assert _typed_summary(path, RUN, LANGUAGE, None, False) == full_path(path, False, run=RUN, language=LANGUAGE)
    assert _typed_summary(path, RUN, LANGUAGE, None, False).complete


@pytest.mark.parametrize("archived", LRB_FILES, ids=lambda p: p.name)
def test_lrbs_own_files_give_the_full_paths_state_and_take_the_typed_path(tmp_path, archived):
    path = tmp_path / archived.name
    shutil.copy(archived, path)
    assert_same_state(path, json.loads(path.read_text()))
    state = _typed_summary(path, None, None, None, True)
    assert state is not None and state == full_path(path, True)


def test_without_msgspec_every_file_takes_the_full_path(tmp_path, monkeypatch):
    path = base_checkpoint(tmp_path / "results")
    monkeypatch.setattr(typed_mod, "msgspec", None)
    monkeypatch.setattr(typed_mod, "_DECODERS", [])
    assert _typed_summary(path, None, None, None, False) is None
    assert validate_summary(path) == full_path(path, False)


def test_what_is_not_a_regular_file_takes_the_full_path(tmp_path):
    (tmp_path / "results" / LANGUAGE).mkdir(parents=True)
    folder = tmp_path / "results" / LANGUAGE / "org__model.json"
    folder.mkdir()
    assert _typed_summary(folder, None, None, None, False) is None
    assert validate_summary(folder) == full_path(folder, False)
    missing = tmp_path / "results" / LANGUAGE / "org__none.json"
    assert validate_summary(missing) == full_path(missing, False)


def test_the_batch_readers_take_the_typed_path(tmp_path, monkeypatch):
    """validate_each and the pool's worker read a sound file without the full path."""
    from kit.results import parallel
    from kit.results.checkpoint import validate_each

    path = base_checkpoint(tmp_path / "results")
    monkeypatch.setattr(checkpoint_mod, "validate_checkpoint", lambda *a, **k: pytest.fail("full path taken"))
    assert validate_each([(path, {})])[0].complete
    assert parallel._validate(path, {}).complete


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["{!r}", "{:.17g}", "{:e}", "{:.3E}"]))
def test_msgspec_reads_every_number_as_pythons_parser_does(value, form):
    """Where msgspec refuses a number (one that rounds past the largest float), kit takes the full path."""
    text = form.format(value)
    expected = json.loads(f'{{"x": {text}}}')["x"]
    try:
        decoded = msgspec.json.decode(f'{{"x": {text}}}'.encode())["x"]
    except msgspec.ValidationError:
        assert math.isinf(expected)
        return
    assert type(decoded) is type(expected)
    assert decoded == expected and math.copysign(1, decoded) == math.copysign(1, expected)


def _with_value(tmp_path: Path, value_text: bytes) -> Path:
    """A sound checkpoint whose metadata holds one more key, `x`, written as this raw JSON text."""
    path = base_checkpoint(tmp_path / "results")
    text = path.read_bytes()
    path.write_bytes(text.replace(b'"metadata": {', b'"metadata": {"x": ' + value_text + b", ", 1))
    return path


@pytest.mark.parametrize("raw", [e for e in EDGES if e.strip() and b"[1] x" != e], ids=lambda e: repr(e[:24]))
def test_safejsons_edge_values_in_a_checkpoint_give_the_full_paths_state(tmp_path, raw):
    path = _with_value(tmp_path, raw)
    assert validate_summary(path, outcomes=True) == full_path(path, True)


@settings(max_examples=120, deadline=None)
@given(value=values)
def test_any_json_value_in_a_checkpoint_gives_the_full_paths_state(tmp_path_factory, value):
    path = _with_value(tmp_path_factory.mktemp("v"), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    assert validate_summary(path) == full_path(path, False)
