"""Config values as people write them from the seeds and the tools' own docs: a backend in another case
or by another common name, a scheduler in capitals, Singularity for Apptainer. kit reads them as its
own spelling; what stays ambiguous is refused with a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.config.roster import load_roster
from kit.config.sites import G5K_GPU_FILTER, load_sites
from kit.errors import ConfigError

REV = "0123456789abcdef0123456789abcdef01234567"


def _roster(tmp_path: Path, backend: str) -> Path:
    path = tmp_path / "roster.toml"
    path.write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "org/m"\nrevision = "{REV}"\nbackend = "{backend}"\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("written", "backend", "task"), [
    ("vLLM", "vllm", "generate"), ("llama.cpp", "gguf", "generate"), ("llama_cpp", "gguf", "generate"),
    ("GLiClass", "gliclass", "score"), ("GLiNER2", "gliner2", "score"), ("Transformers-5.17", "transformers-5.17",
                                                                          "generate"),
    (" gguf ", "gguf", "generate"),
])
def test_a_backend_in_another_spelling_is_read_as_kit_s(tmp_path: Path, written, backend, task) -> None:
    run = load_roster(_roster(tmp_path, written))[0].run[0]
    assert (run.backend, run.task) == (backend, task)


@pytest.mark.parametrize(("written", "hint"), [("transformers", "say which"), ("sglang", "")])
def test_a_backend_kit_cannot_place_is_refused_with_the_list(tmp_path: Path, written, hint) -> None:
    with pytest.raises(ConfigError) as err:
        load_roster(_roster(tmp_path, written))
    assert "unknown backend" in err.value.message and "transformers-5.11" in err.value.fix
    assert hint in err.value.fix and ("say which" in err.value.fix) == bool(hint)


def test_a_scheduler_in_capitals_and_singularity_are_read_as_kit_s(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text('[site.lyon]\nscheduler = "OAR"\nfrontend = "lyon.g5k"\nroot = "/home/me/kit"\n\n'
                    '[site.jeanzay]\nscheduler = "Slurm"\nruntime = "Singularity"\nroot = "/home/me/kit"\n'
                    'partition = "gpu_p13"\n', encoding="utf-8")
    sites = load_sites(path).site
    assert (sites["lyon"].scheduler, sites["lyon"].runtime, sites["lyon"].gpu_filter) == ("oar", "apptainer",
                                                                                         G5K_GPU_FILTER)
    assert (sites["jeanzay"].scheduler, sites["jeanzay"].runtime) == ("slurm", "apptainer")


def test_an_unknown_runtime_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text('[site.x]\nscheduler = "slurm"\nruntime = "podman"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_sites(path)
    assert "runtime" in err.value.message and "podman" in err.value.message


@pytest.mark.parametrize(("backend", "option", "said"), [
    ("vllm", "gpu_memory_utilizaton", "(did you mean gpu_memory_utilization?)"),
    ("vllm", "tensor_parallel_size", "the vllm backend reads"),
    ("gguf", "filename", "the gguf backend reads"),
    ("gliclass", "labels", "(did you mean label?)"),
])
def test_an_option_the_backend_does_not_read_is_refused(tmp_path: Path, backend, option, said) -> None:
    path = _roster(tmp_path, backend)
    path.write_text(path.read_text(encoding="utf-8") + f"options = {{ {option} = 1 }}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_roster(path)
    assert f"options.{option} is not an option" in err.value.message and said in err.value.message
    assert "attention_heads" in err.value.fix


def test_options_a_backend_reads_and_the_sizing_ones_are_kept(tmp_path: Path) -> None:
    path = _roster(tmp_path, "vllm")
    path.write_text(path.read_text(encoding="utf-8") + "options = { max_num_seqs = 8, attention_heads = 32 }\n",
                    encoding="utf-8")
    assert load_roster(path)[0].run[0].options == {"max_num_seqs": 8, "attention_heads": 32}


def test_language_codes_in_capitals_or_with_an_underscore_are_read_as_codes(tmp_path: Path) -> None:
    path = _roster(tmp_path, "vllm")
    path.write_text(path.read_text(encoding="utf-8") + 'languages = ["FR", "pt_BR", " en", "fr"]\n', encoding="utf-8")
    assert load_roster(path)[0].run[0].languages == ("en", "fr", "pt-BR")


def test_an_empty_language_list_is_refused_with_a_fix(tmp_path: Path) -> None:
    path = _roster(tmp_path, "vllm")
    path.write_text(path.read_text(encoding="utf-8") + "languages = []\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_roster(path)
    assert "languages is empty" in err.value.message and "leave languages out" in err.value.fix


def test_job_types_written_as_one_string_are_read_as_a_list(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text('[site.lyon]\nscheduler = "oar"\njob_types = "night,exotic"\n', encoding="utf-8")
    assert load_sites(path).site["lyon"].job_types == ("night", "exotic")


def test_sites_written_as_an_array_of_named_tables_are_read(tmp_path: Path) -> None:
    path = tmp_path / "clusters.toml"
    path.write_text('[[site]]\nname = "lyon"\nscheduler = "oar"\n\n[[site]]\nname = "jz"\nscheduler = "slurm"\n',
                    encoding="utf-8")
    sites = load_sites(path)
    assert sorted(sites.site) == ["jz", "lyon"] and sites.site["lyon"].name == "lyon"
    with pytest.raises(ConfigError) as err:
        sites.get("nancy")
    assert err.value.fix == f"use one of: lyon, jz, or add [site.nancy] to {path}"


@pytest.mark.parametrize(("body", "said"), [('[[site]]\nscheduler = "oar"\n', "a [[site]] table without a name"),
                                            ('[[site]]\nname = "a"\n\n[[site]]\nname = "a"\n', "'a' is defined twice")])
def test_an_array_of_sites_without_names_or_with_one_twice_is_refused(tmp_path: Path, body, said) -> None:
    path = tmp_path / "sites.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_sites(path)
    assert said in err.value.message and str(path) in err.value.message


def test_plan_without_a_roster_here_says_so(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from kit.cli.main import cli

    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["plan"])
    assert "no roster.toml here and no --benchmark given" in str(r.exception)


def test_a_walltime_written_as_a_number_is_read_in_the_scheduler_s_grammar(tmp_path: Path) -> None:
    path = tmp_path / "sites.toml"
    path.write_text('[site.jz]\nscheduler = "slurm"\nwalltime = 90\n\n[site.lyon]\nscheduler = "oar"\nwalltime = 2\n',
                    encoding="utf-8")
    sites = load_sites(path).site
    assert sites["jz"].walltime_s == 90 * 60 and sites["lyon"].walltime_s == 2 * 3600   # Slurm minutes, OAR hours


def _run_without_backend(tmp_path: Path, model: str) -> Path:
    path = tmp_path / "roster.toml"
    path.write_text(f'benchmark = "data"\n\n[[run]]\nmodel = "{model}"\nrevision = "{REV}"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(("model", "backend", "task"), [
    ("unsloth/Qwen3-4B-GGUF", "gguf", "generate"), ("knowledgator/gliclass-multilang-ultra", "gliclass", "score"),
    ("fastino/gliner2.5-multi-v1", "gliner2", "score"),
])
def test_a_model_id_that_names_its_backend_needs_no_backend_key(tmp_path: Path, model, backend, task) -> None:
    run = load_roster(_run_without_backend(tmp_path, model))[0].run[0]
    assert (run.backend, run.task) == (backend, task)


@pytest.mark.parametrize("model", ["Qwen/Qwen3-4B", "urchade/gliner_multi-v2.1",
                                   "knowledgator/gliner-multitask-large-v0.5"])
def test_a_model_id_that_does_not_name_its_backend_is_asked_for_one(tmp_path: Path, model) -> None:
    """A GLiNER (first library) id names no backend kit has: gliner2 does not load it."""
    with pytest.raises(ConfigError) as err:
        load_roster(_run_without_backend(tmp_path, model))
    assert f"run {model!r}: backend is missing" in err.value.message and "vllm" in err.value.fix
