"""Tiny models in a hub cache, offline snapshot resolution, and the transformers backend on them."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit.config.roster import Run
from kit.demo.model import build_tiny_classifier, build_tiny_llama, content_revision, repo_folder
from kit.errors import ConfigError
from kit.weights.manifest import read_manifest
from kit.weights.snapshot import resolve_snapshot, weight_files_sha256
from kit.worker.backends.base import Backend, Generation, get_backend, known_backends

pytestmark = pytest.mark.slow

PROMPTS = [
    "Does this sentence describe land use? A dense forest covers the hills. Answer yes or no.",
    "Cette phrase décrit-elle l'occupation du sol ? Des champs de blé entourent la ville.",
    "Beschreibt dieser Satz die Landnutzung? Der Bürgermeister wurde 1998 gewählt.",
    "Private tennis lessons offered.",
    "yes",
]


@pytest.fixture(scope="session")
def hub(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Both tiny models, built once per session into one hub cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        cache = tmp_path_factory.mktemp("hub")
        return SimpleNamespace(cache=cache, llama=build_tiny_llama(cache), clf=build_tiny_classifier(cache))


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


def _backend(hub: SimpleNamespace, model: tuple[str, str], **settings) -> Backend:
    repo_id, revision = model
    run = Run(model=repo_id, revision=revision, backend="transformers-5.17", **settings)
    backend = get_backend(run.backend)(run, resolve_snapshot(repo_id, revision, hub.cache))
    backend.load()
    return backend


# --- the hub cache ---------------------------------------------------------------------


def test_cache_layout(hub):
    for repo_id, revision in (hub.llama, hub.clf):
        repo = repo_folder(hub.cache, repo_id)
        assert (repo / "refs" / "main").read_text() == revision  # no newline: the hub reads it verbatim
        snapshot = repo / "snapshots" / revision
        assert content_revision(snapshot) == revision
        assert sorted(p.name for p in repo.iterdir()) == ["kit-manifests", "refs", "snapshots"]
        manifest = read_manifest(repo / "kit-manifests" / f"{revision}.json")   # as `kit weights stage` writes it
        assert sorted(manifest.files) == sorted(p.name for p in snapshot.iterdir()) and manifest.revision == revision
        tok_config = json.loads((snapshot / "tokenizer_config.json").read_text())
        assert tok_config["tokenizer_class"] == "PreTrainedTokenizerFast"
        assert "transformers_version" not in json.loads((snapshot / "config.json").read_text())
        umask = os.umask(0)
        os.umask(umask)
        modes = {stat.S_IMODE(p.stat().st_mode) for p in snapshot.iterdir()}
        assert modes == {0o666 & ~umask}  # safetensors writes 0600; a shared cache needs the umask
    llama = repo_folder(hub.cache, hub.llama[0]) / "snapshots" / hub.llama[1]
    config = json.loads((llama / "config.json").read_text())
    assert (config["hidden_size"] // config["num_attention_heads"], config["vocab_size"]) == (64, 384)
    assert json.loads((llama / "generation_config.json").read_text())["eos_token_id"] == config["eos_token_id"]


def test_rebuild_elsewhere_gives_same_revision(hub, tmp_path):
    assert build_tiny_llama(tmp_path) == hub.llama
    assert build_tiny_classifier(tmp_path) == hub.clf


def test_build_is_idempotent(hub):
    snapshot = repo_folder(hub.cache, hub.llama[0]) / "snapshots" / hub.llama[1]
    before = snapshot.stat().st_mtime_ns
    assert build_tiny_llama(hub.cache) == hub.llama
    assert snapshot.stat().st_mtime_ns == before


def test_other_shape_builds_a_new_revision(hub, tmp_path):
    repo_id, revision = build_tiny_llama(tmp_path, hidden=64, heads=1)
    assert repo_id == hub.llama[0] and revision != hub.llama[1]


# --- snapshot resolution -------------------------------------------------------------------


def test_resolve_by_revision_and_by_main(hub):
    repo_id, revision = hub.llama
    expected = repo_folder(hub.cache, repo_id) / "snapshots" / revision
    assert resolve_snapshot(repo_id, revision, hub.cache) == expected
    assert resolve_snapshot(repo_id, None, hub.cache) == expected
    assert resolve_snapshot(repo_id, "main", hub.cache) == expected


def test_missing_revision_is_a_config_error(hub):
    wrong = "0" * 40
    with pytest.raises(ConfigError) as err:
        resolve_snapshot(hub.llama[0], wrong, hub.cache)
    text = err.value.one_line()
    assert hub.llama[0] in text and wrong in text and str(hub.cache) in text and "kit weights stage" in text
    with pytest.raises(ConfigError, match="kit-demo/absent"):
        resolve_snapshot("kit-demo/absent", None, hub.cache)


def test_weight_files_sha256(hub):
    snapshot = resolve_snapshot(*hub.clf, hub.cache)
    digests = weight_files_sha256(snapshot)
    assert digests == {"model.safetensors": hashlib.sha256((snapshot / "model.safetensors").read_bytes()).hexdigest()}


# --- registry ------------------------------------------------------------------------------------


def test_registry_names():
    assert get_backend("transformers") is get_backend("transformers-5.17")
    with pytest.raises(ConfigError, match="transformers-5.17"):
        get_backend("no-such-engine")
    assert "transformers" in known_backends()


def test_importing_the_engine_stays_cheap():
    code = ("import sys, kit.worker.backends.transformers, kit.weights.snapshot, kit.demo.model; "
            "heavy = {'torch', 'transformers', 'tokenizers', 'huggingface_hub', 'safetensors'} & set(sys.modules); "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_score_only_task_unsupported_message():
    class Scorer(Backend):
        name = "scorer"

        def load(self) -> None: ...

        def versions(self) -> dict[str, str | None]:
            return {}

    with pytest.raises(ConfigError, match="backend scorer does not support task generate"):
        Scorer(None, Path(".")).generate(["x"])


# --- transformers: generate ---------------------------------------------------------------------


def test_generate_is_deterministic(hub):
    backend = _backend(hub, hub.llama, batch_size=5, max_new_tokens=12)
    first, second = backend.generate(PROMPTS), backend.generate(PROMPTS)
    assert first == second and len(first) == len(PROMPTS)
    assert all(isinstance(g, Generation) and 0 < g.generated_tokens <= 12 for g in first)
    assert len({g.text for g in first}) > 1


def test_batch_size_does_not_change_outputs(hub):
    small = _backend(hub, hub.llama, batch_size=2, max_new_tokens=12).generate(PROMPTS)
    whole = _backend(hub, hub.llama, batch_size=5, max_new_tokens=12).generate(PROMPTS)
    single = _backend(hub, hub.llama, batch_size=1, max_new_tokens=12).generate(PROMPTS)
    assert small == whole == single


def test_chat_template_is_used(hub):
    from kit.worker.backends.hf import render_prompts, uses_chat_template

    backend = _backend(hub, hub.llama, max_new_tokens=4)
    assert uses_chat_template(backend.tokenizer)
    rendered = render_prompts(backend.tokenizer, ["Oui ou non ?"])
    assert rendered == ["<s><|user|>\nOui ou non ?\n<|assistant|>\n"]


def test_truncated_when_max_new_tokens_is_tiny(hub):
    out = _backend(hub, hub.llama, batch_size=5, max_new_tokens=2).generate(PROMPTS)
    assert all(g.truncated and g.generated_tokens == 2 for g in out)


def test_count_generated_stops_at_first_eos():
    from kit.worker.backends.hf import count_generated

    assert count_generated([5, 6, 3, 0, 0], [3], 5) == (3, False)
    assert count_generated([5, 6, 7], [3, 9], 3) == (3, True)
    assert count_generated([9], [3, 9], 3) == (1, False)


def test_overlong_input_is_refused(hub):
    backend = _backend(hub, hub.llama, batch_size=2, max_new_tokens=8)
    long_prompt = "forest " * 2100
    with pytest.raises(ConfigError, match=r"input 2 of this batch .* at most 2040 \(2048 context - 8"):
        backend.generate([PROMPTS[0], PROMPTS[1], long_prompt])
    with pytest.raises(ConfigError, match="leaves no room"):
        _backend(hub, hub.llama, max_new_tokens=2048).generate(PROMPTS[:1])


# --- transformers: score and facts --------------------------------------------------------------------


def test_score_sums_to_one_and_is_stable(hub):
    backend = _backend(hub, hub.clf, task="score", batch_size=2)
    first, second = backend.score(PROMPTS), backend.score(PROMPTS)
    assert first == second and len(first) == len(PROMPTS)
    for s in first:
        assert s.yes + s.no == pytest.approx(1.0, abs=1e-12) and 0.0 < s.yes < 1.0
        assert s.yes == pytest.approx(1 / (1 + 2.718281828459045 ** -s.native), rel=1e-6)
    whole = _backend(hub, hub.clf, task="score", batch_size=5).score(PROMPTS)
    assert [s.yes for s in whole] == pytest.approx([s.yes for s in first], abs=1e-6)
    with pytest.raises(ConfigError, match="input 0"):
        backend.score(["forest " * 600])


def test_yes_label_and_dtype_rules():
    from kit.worker.backends.hf import resolve_dtype, yes_label_index

    assert yes_label_index({0: "no", 1: "yes"}) == 1
    assert yes_label_index({"0": "Relevant", "1": "not_relevant"}) == 0
    assert yes_label_index({0: "LABEL_0", 1: "LABEL_1"}) == 1
    assert resolve_dtype("auto", "bfloat16", cuda=False, bf16=False) == "float32"
    assert resolve_dtype("auto", "bfloat16", cuda=True, bf16=True) == "bfloat16"
    assert resolve_dtype("auto", "bfloat16", cuda=True, bf16=False) == "float16"
    assert resolve_dtype("auto", None, cuda=True, bf16=True) == "float32"
    assert resolve_dtype("float16", "float32", cuda=False, bf16=False) == "float16"


def test_versions_and_model_info(hub):
    backend = _backend(hub, hub.llama, max_new_tokens=4)
    versions = backend.versions()
    assert versions["torch"] and versions["transformers"] and versions["python"]
    info = backend.model_info()
    assert (info["num_attention_heads"], info["max_position_embeddings"], info["dtype"]) == (2, 2048, "float32")
    assert info["num_parameters"] > 0
    backend.close()
    assert backend.model is None
