"""One contract over every registered engine, and the engines' pure helpers (no model is loaded)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from kit.config.backends import (BACKENDS, ENGINE_OPTIONS, ENGINE_SPECS, ENGINE_TASKS, OPTION_KINDS, SHARDING_BACKENDS,
                                 SIZING_OPTIONS, option_fault, options_for, shards)
from kit.config.roster import Run
from kit.errors import ConfigError, MissingExtraError
from kit.worker.backends.base import Backend, Generation, get_backend, remote_code_allowed
from kit.worker.backends.reference import engine_doc, engines

REPO = Path(__file__).resolve().parents[2]
HEX = "0123456789abcdef0123456789abcdef01234567"
# engine -> (the module its load() imports first, the extra the error must name)
LIBRARY = {"transformers": ("torch", "worker"), "vllm": ("vllm", "vllm"), "llama_cpp": ("llama_cpp", "gguf"),
           "gliner2": ("gliner2", "gliner2"), "gliclass": ("gliclass", "gliclass")}
HEAVY = {"torch", "transformers", "tokenizers", "huggingface_hub", "safetensors", "vllm", "llama_cpp", "gliner2",
         "gliclass", "gguf", "numpy"}


def _family(engine: str) -> str:
    return next(f for f, e in BACKENDS.items() if e == engine)


def _run(engine: str, **settings) -> Run:
    task = "score" if engine in ("gliner2", "gliclass") else "generate"
    return Run(model="org/name", revision=HEX, backend=_family(engine), **{"task": task, **settings})


def test_every_engine_is_covered():
    assert set(engines()) == set(BACKENDS.values()) == set(LIBRARY)


def test_each_engine_has_one_spec_that_the_image_lint_and_sizing_read():
    assert set(ENGINE_SPECS) == set(BACKENDS.values())
    for engine, spec in ENGINE_SPECS.items():
        assert LIBRARY[engine][0] in spec.modules    # what load() imports first, `kit images lint` imports too
        assert spec.tasks and set(spec.options).isdisjoint({"attention_heads", "kv_heads"})
    assert SHARDING_BACKENDS == {"vllm"} and shards("vllm") and not shards("transformers-5.17")


@pytest.mark.parametrize("engine", engines())
def test_engine_is_registered_under_every_family(engine):
    cls = get_backend(engine)
    assert issubclass(cls, Backend) and cls.name == engine
    assert all(get_backend(f) is cls for f, e in BACKENDS.items() if e == engine)


@pytest.mark.parametrize("engine", engines())
def test_docstring_lists_settings_and_a_valid_roster_example(engine):
    doc = engine_doc(engine)
    keys = [key for key, _default, _text in doc.settings]
    assert "task" in keys and len(keys) == len(set(keys))
    assert all(default and text for _key, default, text in doc.settings)
    example = tomllib.loads(doc.example.replace("<40-hex>", HEX))
    (entry,) = example["run"]
    run = Run.model_validate(entry)
    assert BACKENDS[run.backend] == engine
    documented = {key.removeprefix("options.") for key in keys if key.startswith("options.")}
    assert set(run.options) <= documented, "the example uses an option the docstring does not list"


@pytest.mark.parametrize("engine", engines())
def test_the_config_task_table_says_what_the_docstring_says(engine):
    # kit.config cannot import the engines (torch): its table must agree with their documented tasks
    (default, text) = next((d, t) for key, d, t in engine_doc(engine).settings if key == "task")
    tasks = ENGINE_TASKS[engine]
    assert default == tasks[0]
    assert text == f"{tasks[0]} only" if len(tasks) == 1 else all(f"`{t}`" in text for t in tasks)
    for family in (f for f, e in BACKENDS.items() if e == engine):
        assert Run(model="org/name", revision=HEX, backend=family).task == default


@pytest.mark.parametrize("engine", engines())
def test_the_config_option_table_says_what_the_docstring_says(engine):
    # the roster refuses options an engine does not read: the table must list exactly the documented ones
    documented = [key.removeprefix("options.") for key, _d, _t in engine_doc(engine).settings if key.startswith("options.")]
    assert ENGINE_OPTIONS[engine] == tuple(documented)


def test_every_option_an_engine_reads_has_one_kind():
    read = {key for options in ENGINE_OPTIONS.values() for key in options} | set(SIZING_OPTIONS)
    assert set(OPTION_KINDS) == read


@pytest.mark.parametrize("engine", engines())
def test_each_documented_default_is_of_its_options_kind(engine):
    """The roster and the worker check an option by its kind: the engine's own default must pass."""
    for key, default, _text in engine_doc(engine).settings:
        if not key.startswith("options."):
            continue
        try:
            value = tomllib.loads(f"v = {default}")["v"]
        except tomllib.TOMLDecodeError:   # "none", "the only *.gguf": no value of its own
            continue
        assert option_fault(key.removeprefix("options."), value) is None, (key, default)


@pytest.mark.parametrize("key", sorted(OPTION_KINDS))
def test_the_roster_and_the_worker_refuse_an_option_of_another_kind(key):
    """A value of no kind (a table), or a number out of range, is refused by the roster with the option's
    name, and by the worker's option() for a run made without the roster's checks."""
    family = next(f for f in BACKENDS if key in options_for(f))
    task = "score" if "score" in ENGINE_TASKS[BACKENDS[family]] and key in ("threshold", "score_kind") else None
    settings = {"task": task} if task else {}
    with pytest.raises(ValueError, match=rf"options\.{key} = \{{'x': 1\}} is not "):
        Run(model="org/name", revision=HEX, backend=family, options={key: {"x": 1}}, **settings)
    run = Run.model_construct(**{**Run(model="org/name", revision=HEX, backend=family, **settings).__dict__,
                                 "options": {key: {"x": 1}}})
    with pytest.raises(ConfigError, match=rf"options\.{key} = "):
        get_backend(BACKENDS[family])(run, Path(".")).option(key, None)


@pytest.mark.parametrize(("key", "bad", "good"), [("max_model_len", 0, 1), ("gpu_memory_utilization", 0, 1.0),
                                                  ("threshold", 1.5, 0.0), ("n_ctx", -1, 0), ("n_gpu_layers", -2, -1),
                                                  ("max_num_seqs", True, 16), ("threshold", float("inf"), 1),
                                                  ("labels", [], ["relevant"]), ("yes_token", [1], ["yes", "Yes"])])
def test_an_options_range_ends_are_where_its_kind_says(key, bad, good):
    assert option_fault(key, bad) is not None and option_fault(key, good) is None


@pytest.mark.parametrize("engine", engines())
def test_versions_work_before_load(engine):
    versions = get_backend(engine)(_run(engine), Path(".")).versions()
    assert versions["python"] == ".".join(map(str, sys.version_info[:3]))
    assert all(v is None or isinstance(v, str) for v in versions.values())


@pytest.mark.parametrize("engine", engines())
def test_missing_library_names_the_extra(engine, monkeypatch):
    module, extra = LIBRARY[engine]
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails, installed or not
    with pytest.raises(MissingExtraError) as err:
        get_backend(engine)(_run(engine), Path(".")).load()
    assert f"kit-sweep[{extra}]" in err.value.one_line()


def test_importing_engines_and_demo_builders_stays_cheap():
    modules = [f"kit.worker.backends.{m}" for m in (*engines(), "scoring", "reference", "probe")]
    modules += ["kit.demo.gguf", "kit.demo.gl", "kit.demo.scorers", "kit.demo.backends"]
    code = (f"import sys; import {', '.join(modules)}; heavy = {sorted(HEAVY)!r}; "
            "loaded = sorted(set(heavy) & set(sys.modules)); assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_generation_stays_compatible():
    old = Generation("yes", False, 1)
    assert old.token_ids is None and old == Generation("yes", False, 1, None)
    assert Generation("yes", False, 2, (5, 3)).token_ids == (5, 3)


# --- shared rules ---------------------------------------------------------------------------


def test_remote_code_needs_opt_in_and_pinned_revision():
    assert remote_code_allowed(Run(model="a/b", revision=HEX, backend="vllm", trust_remote_code=True))
    assert not remote_code_allowed(Run(model="a/b", revision=HEX, backend="vllm"))
    assert not remote_code_allowed(SimpleNamespace(trust_remote_code=True, revision=None))
    assert not remote_code_allowed(SimpleNamespace(trust_remote_code=True, revision="main"))
    assert get_backend("vllm")(Run(model="a/b", revision=HEX, backend="vllm"), Path(".")).remote_code() is False


def test_options_are_typed():
    """option(): the roster's kind of the option (a run built without the roster's checks), else the
    kind the call names."""
    made = _run("llama_cpp")
    run = Run.model_construct(**{**made.__dict__, "options": {"n_ctx": "big", "n_batch": True, "other": 3}})
    backend = get_backend("llama_cpp")(run, Path("."))
    assert backend.option("n_threads", None, int) is None
    assert backend.option("gguf_file", "x.gguf", str) == "x.gguf"
    with pytest.raises(ConfigError, match=r"options.n_ctx = 'big' is not an integer, 0 or more"):
        backend.option("n_ctx", 0, int)
    with pytest.raises(ConfigError, match="options.n_batch"):
        backend.option("n_batch", 512, int)  # a bool is no count
    with pytest.raises(ConfigError, match=r"options.other = 3 is not a str"):
        backend.option("other", "", str)


def test_tensor_parallel_size_from_the_launcher():
    from kit.worker.backends.vllm import tensor_parallel_size

    assert [tensor_parallel_size(env) for env in ({}, {"KIT_GPUS": ""}, {"KIT_GPUS": "0"}, {"KIT_GPUS": "4"},
                                                   {"KIT_GPUS": "x"})] == [1, 1, 1, 4, 1]


def test_gguf_file_is_chosen_inside_the_snapshot(tmp_path):
    from kit.worker.backends.llama_cpp import gguf_path

    (tmp_path / "sub").mkdir()
    (tmp_path / "a-Q4_K_M.gguf").write_bytes(b"")
    assert gguf_path(tmp_path, None) == tmp_path / "a-Q4_K_M.gguf"
    (tmp_path / "sub" / "b-F32.gguf").write_bytes(b"")
    with pytest.raises(ConfigError, match="holds 2 .gguf files: a-Q4_K_M.gguf, sub/b-F32.gguf"):
        gguf_path(tmp_path, None)
    assert gguf_path(tmp_path, "sub/b-F32.gguf") == tmp_path / "sub" / "b-F32.gguf"
    for bad in ("../a-Q4_K_M.gguf", str(tmp_path / "a-Q4_K_M.gguf"), "c.gguf"):
        with pytest.raises(ConfigError, match="is not a .gguf file of snapshot"):
            gguf_path(tmp_path, bad)


def test_gguf_file_type_names():
    from kit.worker.backends.llama_cpp import file_type_name

    assert [file_type_name({"general.file_type": v}) for v in ("0", "1", "7", "15", "32", "99", "x")] == \
        ["F32", "F16", "Q8_0", "Q4_K_M", "BF16", None, None]
    assert file_type_name({}) is None


def test_nli_inputs_split_into_premise_and_hypothesis():
    from kit.worker.backends.gliner2 import premise_of
    from kit.worker.backends.scoring import split_premise_hypothesis

    text = "Intro.\n\nTARGET SENTENCE: Wheat fields.\n\nHYPOTHESIS: It is about land use.\n"
    assert split_premise_hypothesis(text, "HYPOTHESIS:", "TARGET SENTENCE:", None) == \
        ("Wheat fields.", "It is about land use.")
    assert split_premise_hypothesis("Wheat fields.", "HYPOTHESIS:", "TARGET SENTENCE:", "Farmland.") == \
        ("Wheat fields.", "Farmland.")
    with pytest.raises(ConfigError, match="options.hypothesis"):
        split_premise_hypothesis("Wheat fields.", "HYPOTHESIS:", "TARGET SENTENCE:", None)
    assert premise_of(text, "HYPOTHESIS:", "TARGET SENTENCE:") == "Wheat fields."
    assert premise_of("plain", "HYPOTHESIS:", "TARGET SENTENCE:") == "plain"


def test_log_odds_scores():
    from kit.worker.backends.scoring import from_log_odds, score_kind

    for native in (-800.0, -2.5, 0.0, 1e-9, 3.0, 800.0):
        s = from_log_odds(native)
        assert 0.0 <= s.yes <= 1.0 and s.yes + s.no == pytest.approx(1.0, abs=1e-15) and s.native == native
    assert from_log_odds(0.0).yes == 0.5 and from_log_odds(2.0).yes == pytest.approx(0.8807970779778823)
    assert score_kind({}) == "classifier" and score_kind({"score_kind": "nli"}) == "nli"
    with pytest.raises(ConfigError, match="reranker, causal, nli, masked_lm"):
        score_kind({"score_kind": "cosine"})


def test_rotary_permute_interleaves_each_head():
    np = pytest.importorskip("numpy")
    from kit.demo.gguf import rotary_permute

    w = np.arange(2 * 8 * 3).reshape(16, 3)  # 2 heads of head_dim 8, 3 inputs
    rows = rotary_permute(w, 2)[:, 0] // 3
    assert rows.tolist() == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]
