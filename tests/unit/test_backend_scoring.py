"""The transformers engine's five score kinds on tiny local models: deterministic, normalised,
batch-size independent, refusing over-long inputs, and stored so that thresholds recompute."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from kit.config.roster import Run
from kit.demo.model import build_tiny_classifier, build_tiny_llama
from kit.demo.scorers import build_tiny_masked_lm, build_tiny_nli
from kit.errors import ConfigError
from kit.results.metrics import compute_metrics
from kit.weights.snapshot import resolve_snapshot
from kit.worker.backends.base import get_backend
from kit.worker.record import score_predictions

pytestmark = pytest.mark.slow

# Content-hash revisions of the builders' output: a change means the tiny models changed.
NLI_REVISION = "c1e907b102fc138ee35ec51c8fe43a829fbed19b"
MASKED_LM_REVISION = "42b44c6b1da8cb1e4f0625edc05a2a6daec1f776"

SENTENCES = [
    "The village is surrounded by vineyards and olive groves.",
    "The mayor was elected in 1998.",
    "A dense pine forest covers the hills north of the town.",
    "Its football club was founded by railway workers.",
    "Wheat fields stretch across the plain as far as the motorway.",
]
ZEROSHOT = "TARGET SENTENCE: {}\n\nHYPOTHESIS: This sentence is about the land use of its place.\n"
MASKED = "Is the sentence about land use? TARGET SENTENCE: {} ANSWER: [MASK]"
RERANK = "<Query>: Does this sentence carry a land-use signal?\n<Document>: {}\n"
ANSWERS = {"yes_token": " yes", "no_token": " no"}  # the tiny BPE keeps " yes"/" no" whole, not "no"
# kind -> (model key, prompt, options)
KINDS = {
    "classifier": ("clf", RERANK, {}),
    "reranker": ("llama", RERANK, {"prefix": "<|user|>\n", "suffix": "\n<|assistant|>\n", **ANSWERS}),
    "causal": ("llama", RERANK, ANSWERS),
    "nli": ("nli", ZEROSHOT, {}),
    "masked_lm": ("mlm", MASKED, {}),
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> SimpleNamespace:
    """The four tiny models in one hub cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        cache = tmp_path_factory.mktemp("hub")
        return SimpleNamespace(cache=cache, llama=build_tiny_llama(cache), clf=build_tiny_classifier(cache),
                               nli=build_tiny_nli(cache), mlm=build_tiny_masked_lm(cache))


def _backend(hub, kind: str, batch_size: int = 2, **extra):
    key, _prompt, options = KINDS[kind]
    repo_id, revision = getattr(hub, key)
    run = Run(model=repo_id, revision=revision, backend="transformers-5.11", task="score", batch_size=batch_size,
              options={"score_kind": kind, **options, **extra})
    backend = get_backend(run.backend)(run, resolve_snapshot(repo_id, revision, hub.cache))
    backend.load()
    return backend


def _texts(kind: str) -> list[str]:
    return [KINDS[kind][1].format(s) for s in SENTENCES]


def test_new_builders_are_pinned(hub, tmp_path):
    assert hub.nli[1] == NLI_REVISION and hub.mlm[1] == MASKED_LM_REVISION
    assert build_tiny_nli(tmp_path) == hub.nli and build_tiny_masked_lm(tmp_path) == hub.mlm


@pytest.mark.parametrize("kind", list(KINDS))
def test_scores_are_deterministic_normalised_and_batch_independent(hub, kind):
    backend = _backend(hub, kind, batch_size=2)
    first, second = backend.score(_texts(kind)), backend.score(_texts(kind))
    assert first == second and len(first) == len(SENTENCES)
    for s in first:
        assert 0.0 < s.yes < 1.0 and s.yes + s.no == pytest.approx(1.0, abs=1e-12)
        # every kind here stores log-odds (or the one-logit classifier's logit): yes = sigmoid(native)
        assert s.yes == pytest.approx(1.0 / (1.0 + math.exp(-s.native)), rel=1e-6)
    assert len({round(s.native, 9) for s in first}) == len(SENTENCES), "the inputs must get different scores"
    alone = _backend(hub, kind, batch_size=1).score(_texts(kind))
    assert [s.native for s in alone] == pytest.approx([s.native for s in first], abs=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_overlong_input_is_refused_before_scoring(hub, kind):
    backend = _backend(hub, kind)
    long_text = KINDS[kind][1].format("forest " * 2100)
    with pytest.raises(ConfigError, match=r"input 1 of this batch .*kit never truncates"):
        backend.score([_texts(kind)[0], long_text])


@pytest.mark.parametrize("kind", list(KINDS))
def test_stored_scores_round_trip_and_thresholds_recompute(hub, kind):
    scores = _backend(hub, kind).score(_texts(kind))
    ids, expected = [f"i{n}" for n in range(len(SENTENCES))], ["yes", "no", "yes", "no", "yes"]
    stored = json.loads(json.dumps(score_predictions(ids, expected, scores, 0.5)))
    for pred, s in zip(stored, scores):
        assert (pred["score_yes"], pred["score_no"], pred["native_score"]) == (s.yes, s.no, s.native)
    yes_scores = sorted(p["score_yes"] for p in stored)
    for threshold in (0.0, yes_scores[1], 0.5, yes_scores[-1], 1.0):
        again = [{**p, "predicted": "yes" if p["score_yes"] >= threshold else "no"} for p in stored]
        assert again == score_predictions(ids, expected, scores, threshold)
        assert compute_metrics(again) == compute_metrics(score_predictions(ids, expected, scores, threshold))


def test_answer_words_must_be_single_tokens(hub):
    with pytest.raises(ConfigError, match=r"options.no_token word 'no' is 2 tokens"):
        _backend(hub, "causal", no_token="no").score(_texts("causal")[:1])
    several = _backend(hub, "causal", yes_token=[" yes", "yes"]).score(_texts("causal")[:2])
    single = _backend(hub, "causal").score(_texts("causal")[:2])
    assert all(a.native >= b.native for a, b in zip(several, single))  # more yes words, more yes mass


def test_kind_specific_input_errors(hub):
    with pytest.raises(ConfigError, match=r"holds 0 '\[MASK\]' placeholders"):
        _backend(hub, "masked_lm").score(["no mask here"])
    with pytest.raises(ConfigError, match="HYPOTHESIS"):
        _backend(hub, "nli").score(["TARGET SENTENCE: no hypothesis line"])
    fixed = _backend(hub, "nli", hypothesis="It is about land use.").score(["Wheat fields."])
    split = _backend(hub, "nli").score(["TARGET SENTENCE: Wheat fields.\nHYPOTHESIS: It is about land use."])
    assert fixed == split
    # refused where the roster is read (a ValueError of its model), before any engine is started
    with pytest.raises(ValueError, match="not a score kind"):
        _backend(hub, "classifier", score_kind="cosine")


def test_remote_code_is_passed_only_when_pinned_and_opted_in(hub, monkeypatch):
    import transformers

    seen: list[bool] = []
    original = transformers.AutoTokenizer.from_pretrained

    def spy(*args, **kwargs):
        seen.append(kwargs.get("trust_remote_code"))
        return original(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", spy)
    repo_id, revision = hub.clf
    for opt_in in (False, True):
        run = Run(model=repo_id, revision=revision, backend="transformers-5.17", task="score", trust_remote_code=opt_in)
        get_backend(run.backend)(run, resolve_snapshot(repo_id, revision, hub.cache)).load()
    assert seen == [False, True]
