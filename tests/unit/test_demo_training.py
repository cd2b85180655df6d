"""The demo's tiny models are fitted to the demo task: deterministic bytes, a recorded recipe, and the
labels taught wrong exactly as FLIPS says."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kit.demo import train
from kit.demo.dataset import labelled_sentences
from kit.demo.model import TRAINING_KEY, build_tiny_classifier, build_tiny_llama, repo_folder


@pytest.mark.parametrize("model", sorted(train.FLIPS))
def test_training_items_flip_the_stated_number_of_labels_per_language(model):
    taught = train.training_items(model)
    truth = labelled_sentences()
    assert [(lang, s) for lang, s, _l in taught] == [(lang, s) for lang, _i, s, _l in truth]
    wrong = Counter(lang for (lang, _s, label), (_lang, _i, _s2, gold) in zip(taught, truth) if label != gold)
    assert dict(wrong) == {k: v for k, v in train.FLIPS[model].items() if v}
    assert train.training_items(model) == taught


@pytest.mark.slow
def test_fitted_models_are_deterministic_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    first = build_tiny_llama(tmp_path / "a", trained=True), build_tiny_classifier(tmp_path / "a", trained=True)
    again = build_tiny_llama(tmp_path / "b", trained=True), build_tiny_classifier(tmp_path / "b", trained=True)
    assert first == again                                            # same bytes, same content revision
    plain = build_tiny_llama(tmp_path / "a"), build_tiny_classifier(tmp_path / "a")
    assert [p[1] for p in plain] != [f[1] for f in first]             # random-weight builds stay as they were
    for repo_id, revision in first:
        config = json.loads((repo_folder(tmp_path / "a", repo_id) / "snapshots" / revision / "config.json").read_text())
        assert config[TRAINING_KEY] == train.RECIPE
    assert build_tiny_llama(tmp_path / "a", trained=True) == first[0]  # the cache answers by recipe
