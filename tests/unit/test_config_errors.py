"""Every bad-input class: one stderr line naming the file and key (and line), the fix, exit 2,
no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kit.config.images import load_images
from kit.config.roster import load_roster
from kit.config.sites import load_sites
from kit.errors import ConfigError

REV = "0123456789abcdef0123456789abcdef01234567"


def run_kit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kit", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def roster(body: str) -> str:
    return 'benchmark = "data"\n\n' + body


GOOD_RUN = f'[[run]]\nmodel = "org/m"\nrevision = "{REV}"\nbackend = "transformers-5.17"\n'

ROSTER_CASES = {
    "unknown key": (GOOD_RUN + 'temperature = 0.7\n', ["run[0].temperature", ":7:", "remove it"]),
    "wrong type": (GOOD_RUN + 'batch_size = "big"\n', ["run[0].batch_size", ":7:", "'big'"]),
    "unpinned revision": ('[[run]]\nmodel = "org/m"\nbackend = "transformers-5.17"\n', ["revision is missing", "--allow-unpinned"]),
    "short revision": ('[[run]]\nmodel = "org/m"\nrevision = "main"\nbackend = "vllm"\n', ["'main'", "40-hex", ":5:", "run[0].revision"]),
    "upper-case revision": (f'[[run]]\nmodel = "org/m"\nrevision = "{REV.upper()}"\nbackend = "vllm"\n',
                            ["run[0].revision", "upper case", f"revision = '{REV}'"]),
    "no parameters in any spelling": (GOOD_RUN + 'params = "0B"\n', ["run[0].params", "'0B' is no parameters",
                                                                     'params = "2.6B"']),
    "remote code unpinned": ('[[run]]\nmodel = "org/m"\nbackend = "vllm"\ntrust_remote_code = true\n',
                             ["trust_remote_code", "pinned 40-hex revision"]),
    "unknown backend": (f'[[run]]\nmodel = "org/m"\nrevision = "{REV}"\nbackend = "sglang"\n',
                        ["run[0].backend", "unknown backend", "transformers-5.17", ":6:"]),
    "duplicate run": (GOOD_RUN + "\n" + GOOD_RUN, ["duplicate run", "org/m", "@suffix"]),
    "model id too long for a file name": (GOOD_RUN.replace("org/m", "org/" + "x" * 300), ["run[0].model", "bytes",
                                                                                     "check the model id"]),
    "variant too long for a file name": (GOOD_RUN.replace("org/m", "org/m@" + "v" * 300), ["shorter @variant"]),
    "runs differing only in case": (GOOD_RUN + "\n" + GOOD_RUN.replace("org/m", "Org/M"),
                                    ["'org/m' and run[1] 'Org/M'", "Org__M.json", "ignores case", "@variant"]),
    "toml syntax": (GOOD_RUN + 'batch_size = = 3\n', ["invalid TOML", "line 7"]),
    "bad language": (GOOD_RUN + 'languages = ["en", "French"]\n', ["'French'", "ISO codes"]),
    "params without a unit": (GOOD_RUN + 'params = 70\n', ["run[0].params", ":7:", "70 parameters", 'params = "70B"',
                                                          "70e9"]),
    "option of the wrong type": (GOOD_RUN.replace("transformers-5.17", "vllm") + 'options = { max_model_len = "x" }\n',
                                 ["run[0].options", ":7:", "options.max_model_len = 'x' is not a positive integer",
                                  "engine's default"]),
    "option out of range": (GOOD_RUN.replace("transformers-5.17", "gguf") + 'options = { n_gpu_layers = -2 }\n',
                            ["options.n_gpu_layers = -2 is not an integer, -1 or more", "-1: every layer"]),
    "option not one of its words": (GOOD_RUN + 'task = "score"\noptions = { score_kind = "ranker" }\n',
                                    ["options.score_kind = 'ranker' is not a score kind", "one of classifier, reranker"]),
    "a model id the Hub refuses ('--': two ids' one cache folder)": (GOOD_RUN.replace("org/m", "a--b/c"),
                                                                   ["run[0].model", "has '--'", "models--org--name"]),
    "a gguf file outside the snapshot": (GOOD_RUN.replace("transformers-5.17", "gguf")
                                         + 'options = { gguf_file = "../../../etc/passwd" }\n',
                                         ["options.gguf_file = '../../../etc/passwd' is not a .gguf file's path "
                                          "inside the model's snapshot"]),
    "a gguf file that is not one": (GOOD_RUN.replace("transformers-5.17", "gguf") + 'options = { gguf_file = "x.bin" }\n',
                                    ["options.gguf_file = 'x.bin'"]),
    "task the backend cannot run": (GOOD_RUN.replace("transformers-5.17", "gliclass") + 'task = "generate"\n',
                                    ["run[0].task", ":7:", "'org/m'", "'gliclass'", "score only", "'generate'",
                                     'task = "score"', "vllm"]),
}


@pytest.mark.parametrize("case", sorted(ROSTER_CASES))
def test_roster_errors_are_one_line_with_exit_2(tmp_path, case):
    body, expected = ROSTER_CASES[case]
    (tmp_path / "roster.toml").write_text(roster(body))
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run_kit("plan", "--roster", "roster.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert "Traceback" not in r.stderr
    assert "roster.toml" in line and "fix:" in line
    for piece in expected:
        assert piece in line, (piece, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing half-written


def test_missing_roster_file_names_it(tmp_path):
    r = run_kit("plan", "--roster", "nope.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert "nope.toml" in r.stderr and "not found" in r.stderr and "fix:" in r.stderr


def test_unpinned_allowed_with_flag(tmp_path):
    p = tmp_path / "roster.toml"
    p.write_text(roster('[[run]]\nmodel = "org/m"\nbackend = "vllm"\n'))
    with pytest.raises(ConfigError):
        load_roster(p)
    r, _ = load_roster(p, allow_unpinned=True)
    assert r.run[0].revision is None


def test_variant_runs_are_distinct(tmp_path):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN + "\n" + GOOD_RUN.replace('"org/m"', '"org/m@fast"')))
    r, _ = load_roster(p)
    assert [x.name for x in r.run] == ["org/m", "org/m@fast"]
    assert {x.model_id for x in r.run} == {"org/m"}
    assert r.run[1].file_stem == "org__m@fast"


@pytest.mark.parametrize("value", [70, "70", 1.5, "350", 9_999])
def test_a_bare_params_number_under_ten_thousand_is_refused(tmp_path, value):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN + f"params = {value!r}\n".replace("'", '"')))
    with pytest.raises(ConfigError) as exc:
        load_roster(p)
    assert "run[0].params" in exc.value.message and "parameters" in exc.value.message and "B" in exc.value.fix


@pytest.mark.parametrize("value,count", [('"70B"', 70 * 10**9), ("7e10", 70 * 10**9), ("70_000_000_000", 70 * 10**9),
                                         ('"400K"', 400_000), ('"350M"', 350 * 10**6), ("400_000", 400_000), ("10_000", 10**4)])
def test_params_with_a_unit_or_a_real_count_are_read(tmp_path, value, count):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN + f"params = {value}\n"))
    assert load_roster(p)[0].run[0].params == count


@pytest.mark.parametrize("backend,task", [("gliclass", "score"), ("gliner2", "score"), ("vllm", "generate"),
                                          ("gguf", "generate"), ("transformers-5.17", "generate"),
                                          ("transformers-5.11", "generate")])
def test_a_run_without_task_gets_its_backend_s_own(tmp_path, backend, task):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN.replace("transformers-5.17", backend)))
    assert load_roster(p)[0].run[0].task == task


def test_a_run_keeps_a_task_its_backend_runs(tmp_path):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN + 'task = "score"\n'))
    assert load_roster(p)[0].run[0].task == "score"
    p.write_text(roster(GOOD_RUN.replace("transformers-5.17", "vllm") + 'task = "score"\n'))
    with pytest.raises(ConfigError) as exc:
        load_roster(p)
    assert "'vllm' runs task generate only" in exc.value.message and "transformers-5.17" in exc.value.fix


@pytest.mark.parametrize("body,pieces", [
    ('[site.x]\nscheduler = "pbs"\n', ["site.x.scheduler", "'pbs'"]),
    ('[site.x]\nscheduler = "oar"\njob_types = ["night", "deploy"]\n',
     ["site.x.job_types", ":3:", "'deploy'", "frontend", "kadeploy", "drop deploy", "night, exotic or besteffort"]),
    ('[site.x]\nscheduler = "oar"\njob_types = ["night;rm"]\n', ["not an OAR job type", "night, exotic or besteffort"]),
    ('[site.x]\nscheduler = "slurm"\nwalltime = "90 minutes"\n', ["walltime", "Slurm's M, M:S", "'90m'", ":3:"]),
    ('[site.x]\nscheduler = "local"\nwalltime = "0:30"\n', ["walltime", "H:M:S or D-H:M:S", ":3:"]),
    ('[site.x]\nscheduler = "oar"\nwalltime = "1-00:00"\n', ["walltime", "OAR's H, H:M or H:M:S", ":3:"]),
    ('[site.x]\nscheduler = "slurm"\nfoo = 1\n', ["site.x.foo", "remove it"]),
    ('[site.X]\nscheduler = "slurm"\n', ["'X'", "lower-case"]),
    ('[site.x]\nscheduler = "oar"\nforward_env = ["hf token"]\n', ["forward_env", "environment variable"]),
    ('[site.x]\nscheduler = "oar"\nqueue = "de fault"\n', ["site.x.queue", ":3:", "'de fault'", "as the scheduler lists it"]),
    ('[site.x]\nscheduler = "oar"\nqueue = "default; id"\n', ["site.x.queue", "'default; id'"]),
    ('[site.x]\nscheduler = "oar"\naccount = "proj; id"\n', ["site.x.account", "'proj; id'", "my-project"]),
    ('[site.x]\nscheduler = "slurm"\naccount = "a b"\n', ["site.x.account", "'a b'"]),
    ('[site.x]\nscheduler = "oar"\nsetup = ["module load cuda && echo \'loaded"]\n',
     ["site.x.setup", ":3:", "not valid shell", "unexpected EOF"]),
    ('[site.x]\nscheduler = "oar"\nsetup = ["if true; then", "module load x"]\n', ["site.x.setup", "not valid shell"]),
    ('[site.x]\nscheduler = "oar"\nsetup = ["cat <<EOF", "module load x"]\n', ["site.x.setup", "here-document"]),
    ('[site.x]\nscheduler = "slurm"\npartition = "gpu\\n"\n', ["site.x.partition", "#SBATCH"]),
    ('[site.x]\nscheduler = "oar"\nqueue = "default\\n"\n', ["site.x.queue", "as the scheduler lists it"]),
    ('[site.x]\nscheduler = "oar"\nruntime = "pyxis"\n', ["runs only under Slurm", 'runtime = "enroot"']),
    ('[site.x]\nscheduler = "local"\nruntime = "pyxis"\n', ["runs only under Slurm", 'runtime = "enroot"']),
    ('[site.x]\nscheduler = "slurm"\ncpus_per_task = 8\nsubmit_args = ["--cpus-per-gpu=8"]\n',
     ["--cpus-per-gpu=8", "cpus_per_task", "refuses"]),
    ('[site.x]\nscheduler = "slurm"\nsubmit_args = ["--gpus-per-task=2"]\n', ["submit_args", "--gpus-per-task"]),
    ('[site.x]\nscheduler = "slurm"\npartition = "gpu p100"\n', ["site.x.partition", ":3:", "#SBATCH"]),
    ('[site.x]\nscheduler = "slurm"\nconstraint = "a100 & ib"\n', ["site.x.constraint", ":3:", "& |"]),
    ('[site.x]\nscheduler = "oar"\ngpu_filter = \'gpu_model="A100"\'\n',
     ["site.x.gpu_filter", "column name", "('A100')"]),
])
def test_sites_errors(tmp_path, body, pieces):
    p = tmp_path / "sites.toml"
    p.write_text(body)
    with pytest.raises(ConfigError) as exc:
        load_sites(p)
    line = exc.value.one_line()
    assert "sites.toml" in line and "fix:" in line and "\n" not in line
    for piece in pieces:
        assert piece in line, (piece, line)


def test_oar_site_gets_grid5000_defaults(tmp_path):
    p = tmp_path / "sites.toml"
    p.write_text('[site.nancy]\nscheduler = "oar"\n[site.lyon]\nscheduler = "oar"\njob_types = ["exotic"]\nqueue = "default"\n')
    s = load_sites(p)
    assert s.site["nancy"].job_types == ("night",)
    assert s.site["nancy"].gpu_filter == "gpu_compute_capability_major>=7 AND gpu_mem>=23040"
    assert s.site["nancy"].runtime == "apptainer"
    assert s.site["lyon"].job_types == ("exotic",) and s.site["lyon"].queue == "default"
    with pytest.raises(ConfigError) as exc:
        s.get("rennes")
    assert "nancy" in exc.value.one_line() and "lyon" in exc.value.one_line()


def test_images_file_refuses_unknown_image(tmp_path):
    p = tmp_path / "images.toml"
    p.write_text('[image.sglang]\ndockerfile = "D"\nlock = "l"\nbase = "b"\n')
    with pytest.raises(ConfigError) as exc:
        load_images(p)
    assert "'sglang'" in exc.value.one_line() and "images.toml" in exc.value.one_line()


@pytest.mark.parametrize("variant, tag, named", [
    ("UP/../x", None, "variant name 'UP/../x'"),
    ("v" * 65, None, "variant name"),
    ("-cpu", None, "variant name '-cpu'"),
    ("cpu", '"Kit/Vllm:cpu"', "tag 'Kit/Vllm:cpu'"),
    ("cpu", '"kit/vllm:../x"', "tag 'kit/vllm:../x'"),
    ("cpu", '"kit/vllm:cpu x"', "tag 'kit/vllm:cpu x'"),
])
def test_images_file_refuses_variants_and_tags_docker_and_the_file_system_cannot_take(tmp_path, variant, tag, named):
    """A variant's name ends its default tag and is part of its artifacts' file names; a tag is a Docker
    reference: both are checked when the file is read, not after a build of minutes."""
    p = tmp_path / "images.toml"
    p.write_text('[image.vllm]\ndockerfile = "D"\nlock = "l"\nbase = "b"\n'
                 f'[image.vllm.variants."{variant}"]\ncuda = ""\n' + (f"tag = {tag}\n" if tag else ""))
    with pytest.raises(ConfigError) as exc:
        load_images(p)
    line = exc.value.one_line()
    assert named in line and "images.toml" in line and "fix:" in line and "\n" not in line


def test_images_file_takes_registry_tags_and_derives_a_variants_tag(tmp_path):
    p = tmp_path / "images.toml"
    p.write_text('[image.vllm]\ndockerfile = "D"\nlock = "l"\nbase = "b"\ntag = "registry.example.org:5000/kit/vllm:1.0"\n'
                 '[image.vllm.variants.cpu_2]\ncuda = ""\n')
    assert load_images(p).image["vllm"].with_variant("cpu_2").tag == "registry.example.org:5000/kit/vllm:1.0-cpu_2"


def test_a_value_not_of_its_keys_form_gets_a_fix(tmp_path):
    """A pydantic check with no fix of its own (a pattern) still ends in one: every refusal says what to do."""
    from kit.config.loading import config_error_from

    p = tmp_path / "images.toml"
    p.write_text('[image.vllm]\ndockerfile = "D"\nlock = "l"\nbase = "b"\nglibc = "3.1"\n')
    with pytest.raises(ConfigError) as exc:
        load_images(p)
    assert "image.vllm.glibc" in exc.value.message and "'3.1'" in exc.value.message
    assert "pattern describes" in exc.value.fix
    from pydantic import BaseModel, ValidationError, field_validator

    class Odd(BaseModel):
        x: int = 0

        @field_validator("x")
        @classmethod
        def _x(cls, v: int) -> int:
            raise ValueError("never right")

    with pytest.raises(ValidationError) as raw:
        Odd(x=1)
    assert config_error_from(raw.value, p, None, Odd).fix == "correct x (docs/configuration.md describes every key)"


def test_unknown_model_selection(tmp_path):
    from kit.demo.dataset import write_demo_benchmark

    write_demo_benchmark(tmp_path / "data")
    (tmp_path / "roster.toml").write_text(roster(GOOD_RUN))
    r = run_kit("plan", "--roster", "roster.toml", "--model", "org/other", cwd=tmp_path)
    assert r.returncode == 2
    assert "'org/other'" in r.stderr and "org/m" in r.stderr


@pytest.mark.parametrize("make", ["folder", "device", "loop", "dangling"])
def test_a_config_path_that_is_no_file_says_what_it_is(tmp_path, make):
    import os

    path = tmp_path / "roster.toml"
    if make == "folder":
        path.mkdir()
    elif make == "device":
        os.symlink("/dev/zero", path)
    else:
        os.symlink(path if make == "loop" else tmp_path / "gone.toml", path)
    with pytest.raises(ConfigError) as exc:
        load_roster(path)
    said = {"folder": "not a regular file", "device": "not a regular file",
            "loop": "Too many levels of symbolic links", "dangling": "cannot be read"}[make]
    assert said in exc.value.message and "not found" not in exc.value.message


@pytest.mark.parametrize(("body", "fix"), [("batch_size = 0\n", "use a value of at least 1"),
                                           ("batch_size = 99999\n", "use a value of at most 4096")])
def test_a_value_out_of_bounds_is_told_its_bound(tmp_path, body, fix):
    p = tmp_path / "roster.toml"
    p.write_text(roster(GOOD_RUN + body))
    with pytest.raises(ConfigError) as exc:
        load_roster(p)
    assert "run[0].batch_size" in exc.value.message and exc.value.fix == fix


@pytest.mark.parametrize("written,meant", [("gpus", "gpus_per_node"), ("gpu_memory", "gpu_memory_gib"),
                                           ("job_type", "job_types"), ("walltimes", "walltime")])
def test_an_unknown_site_key_names_the_nearest_one(tmp_path, written, meant):
    (tmp_path / "sites.toml").write_text(f'[site.x]\nscheduler = "slurm"\n{written} = 4\n')
    with pytest.raises(ConfigError) as exc:
        load_sites(tmp_path / "sites.toml")
    assert f"site.x.{written}" in str(exc.value) and f"did you mean {meant}?" in exc.value.one_line()


def test_an_unknown_roster_key_names_the_nearest_one(tmp_path):
    (tmp_path / "roster.toml").write_text(roster(GOOD_RUN + "batchsize = 8\n"))
    with pytest.raises(ConfigError) as exc:
        load_roster(tmp_path / "roster.toml")
    assert "did you mean batch_size?" in exc.value.one_line()


def test_a_remote_host_site_without_python_is_refused_not_given_this_machine_s(tmp_path):
    (tmp_path / "sites.toml").write_text('[site.nancy]\nscheduler = "oar"\nfrontend = "nancy.g5k"\nruntime = "host"\n'
                                         'root = "/home/j/kit"\nresults = "/home/j/r"\n')
    with pytest.raises(ConfigError) as exc:
        load_sites(tmp_path / "sites.toml")
    assert "site.nancy" in str(exc.value) and "needs python" in str(exc.value) and "runtime apptainer" in exc.value.fix


@pytest.mark.parametrize("where", ["the folder", "a parent"])
def test_a_results_folder_that_is_a_file_is_named_as_such(tmp_path, where):
    from kit.worker.writable import check_writable

    blocker = tmp_path / "roster.toml"
    blocker.write_text("x")
    folder = blocker if where == "the folder" else blocker / "results"
    with pytest.raises(ConfigError) as err:
        check_writable(folder)
    assert f"{blocker} is a file, not a folder" in err.value.message and "point --results" in err.value.fix
    assert blocker.read_text() == "x"


@pytest.mark.parametrize("name", ["-x", "_a", "Lyon", "a.b"])
def test_a_site_name_kit_cannot_take_is_refused_with_the_rule_it_breaks(tmp_path, name):
    from kit.config.sites import load_sites
    from kit.errors import ConfigError

    path = tmp_path / "sites.toml"
    path.write_text(f'[site."{name}"]\nscheduler = "local"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_sites(path)
    assert repr(name) in err.value.one_line() and "begin with a lower-case letter or a digit" in err.value.fix


def test_a_site_name_too_long_for_kit_s_file_and_job_names_is_refused_naming_it(tmp_path):
    from kit.config.sites import SITE_NAME_MAX, load_sites
    from kit.errors import ConfigError

    path = tmp_path / "sites.toml"
    path.write_text(f'[site.{"s" * SITE_NAME_MAX}]\nscheduler = "local"\n', encoding="utf-8")
    assert list(load_sites(path).site) == ["s" * SITE_NAME_MAX]
    path.write_text(f'[site.{"s" * (SITE_NAME_MAX + 1)}]\nscheduler = "local"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=f"is {SITE_NAME_MAX + 1} characters long"):
        load_sites(path)


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: p.symlink_to(p.parent / "nowhere"), "is a broken link (to {parent}/nowhere, which does not exist)"),
    (lambda p: p.symlink_to(p), "is a link in a loop"),
])
def test_a_results_folder_that_is_a_broken_link_is_named_as_such(tmp_path, make, said):
    from kit.worker.writable import check_writable

    results = tmp_path / "results"
    make(results)
    with pytest.raises(ConfigError) as err:
        check_writable(results)
    assert said.format(parent=tmp_path) in err.value.message, err.value.message


def test_a_missing_sites_file_says_what_to_write_and_the_option_it_names_exists(tmp_path):
    r = run_kit("run", "--site", "lyon", "--model", "org/m", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "sites.toml: sites file not found" in r.stderr and "[site.lyon]" in r.stderr
    option = r.stderr.split("or pass ")[-1].split()[0]
    assert option in run_kit("run", "--help", cwd=tmp_path).stdout, option
    assert not any(tmp_path.iterdir())


def test_runtime_singularity_runs_the_singularity_command_with_its_own_environment_prefix(tmp_path):
    from kit.launch.runtimes.base import RuntimeContext, get_runtime

    (tmp_path / "sites.toml").write_text('[site.jz]\nscheduler = "slurm"\nruntime = "Singularity"\n'
                                         '[site.other]\nscheduler = "slurm"\nruntime = "apptainer"\n')
    sites = load_sites(tmp_path / "sites.toml")
    jz, other = sites.site["jz"], sites.site["other"]
    assert (jz.runtime, jz.container_command, other.container_command) == ("apptainer", "singularity", "apptainer")
    runtime = get_runtime("apptainer")(jz)
    ctx = RuntimeContext(("shard",), env_names=("HF_HOME",), image="/i/x.sif")
    assert runtime.worker_argv(ctx)[:3] == ["srun", "singularity", "exec"]
    assert any(line.endswith('export SINGULARITYENV_HF_HOME="${HF_HOME}"') for line in runtime.setup_lines(ctx))
    assert "APPTAINERENV_" in " ".join(get_runtime("apptainer")(other).setup_lines(ctx))


def test_what_sites_write_every_day_is_read(tmp_path):
    """Setup split over lines as one block, a lower-case proxy variable, a single-quoted value holding a
    double quote: none of these is refused."""
    p = tmp_path / "sites.toml"
    p.write_text('[site.x]\nscheduler = "oar"\nsetup = ["if [ -f /etc/x ]; then", "module load y", "fi", '
                 '"shopt -s extglob", "ls !(foo) >/dev/null || true"]\n'
                 'forward_env = ["http_proxy", "HF_HOME"]\ngpu_filter = "gpu_model=\'A\\"100\' AND gpu_mem>=40000"\n')
    site = load_sites(p).site["x"]
    assert site.forward_env == ("http_proxy", "HF_HOME") and len(site.setup) == 5


def test_toml_s_own_values_are_read_as_meant_or_refused_with_the_spelling_to_use(tmp_path):
    """walltime = 02:00:00 unquoted is TOML's time of day: read as the H:M:S it spells; a compute capability
    written 9 is 9.0; a list written as one string is refused with the list to write."""
    p = tmp_path / "sites.toml"
    p.write_text('[site.x]\nscheduler = "oar"\nwalltime = 02:00:00\ngpu_compute_capability = 9\n')
    site = load_sites(p).site["x"]
    assert (site.walltime, site.walltime_s, site.gpu_compute_capability) == ("02:00:00", 7200, ("9.0",))
    p.write_text('[site.x]\nscheduler = "slurm"\nwalltime = 48:00:00\n')   # no time of day: a TOML syntax error
    with pytest.raises(ConfigError) as caught:
        load_sites(p)
    assert caught.value.fix.startswith('quote it: walltime = "48:00:00"'), caught.value.one_line()
    p.write_text('[site.x]\nscheduler = "oar"\npolicy_checks = "usagepolicycheck -t"\n')
    with pytest.raises(ConfigError) as caught:
        load_sites(p)
    assert caught.value.fix == 'write a list: policy_checks = ["usagepolicycheck -t"]'
    r = tmp_path / "roster.toml"
    r.write_text(roster(GOOD_RUN + 'languages = "en,fr"\n'))
    with pytest.raises(ConfigError) as caught:
        load_roster(r)
    assert caught.value.fix == 'write a list: languages = ["en", "fr"]', caught.value.one_line()


def test_a_benchmark_under_the_home_folder_is_found_from_the_roster_and_the_option(tmp_path, monkeypatch):
    from kit.config.project import load_project
    from kit.demo.dataset import write_demo_benchmark

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_demo_benchmark(tmp_path / "home" / "bench")
    r = tmp_path / "work" / "roster.toml"
    r.parent.mkdir()
    r.write_text('benchmark = "~/bench"\n' + GOOD_RUN)
    assert load_project(r, None).benchmark.root == (tmp_path / "home" / "bench").resolve()
    assert load_project(None, Path("~/bench"), roster_required=False).benchmark.root == \
        (tmp_path / "home" / "bench").resolve()


def test_an_oar_job_type_with_a_value_keeps_its_commas():
    from kit.config.sites import split_job_types

    assert split_job_types(["night,timesharing=user,*", "exotic container=42"]) == (
        "night", "timesharing=user,*", "exotic", "container=42")
    assert split_job_types(["timesharing=user,*,night"]) == ("timesharing=user,*", "night")
    assert split_job_types(["container=42,night"]) == ("container=42", "night")
    assert split_job_types(["timesharing=*,user", "night,timesharing=user,bob"]) == (
        "timesharing=*,user", "night", "timesharing=user,bob")


def test_params_of_a_mixture_of_experts_is_its_total_as_in_a_model_id():
    from kit.config.roster import parse_param_count

    assert parse_param_count("8x7B") == 56 * 10**9 and parse_param_count("8x22b") == 176 * 10**9
    with pytest.raises(ValueError, match="not a parameter count"):
        parse_param_count("8x")
