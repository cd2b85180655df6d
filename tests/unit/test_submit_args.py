"""sites.toml `submit_args`: options of oarsub or sbatch that kit has no key for (--exclude, --mail-type),
passed as they are after kit's own, and refused where they would repeat what kit sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.config.sites import load_sites
from kit.errors import ConfigError
from kit.launch.request import JobRequest
from kit.launch.schedulers.oar import OarScheduler
from kit.launch.schedulers.slurm import SlurmScheduler


def _site(tmp_path: Path, scheduler: str, args: str):
    path = tmp_path / "sites.toml"
    path.write_text(f'[site.x]\nscheduler = "{scheduler}"\nsubmit_args = {args}\n', encoding="utf-8")
    return load_sites(path).site["x"]


def test_slurm_gets_them_before_the_script(tmp_path: Path) -> None:
    site = _site(tmp_path, "slurm", '["--exclude=node07", "--mail-type=END"]')
    argv = SlurmScheduler(site).submit_argv(JobRequest("j", 1, 3600), Path("jobs/j.sh"), "logs")
    assert argv == ["sbatch", "--parsable", "--exclude=node07", "--mail-type=END", "jobs/j.sh"]


def test_slurm_s_signal_is_the_user_s_to_ask_for(tmp_path: Path) -> None:
    """kit sets no --signal for Slurm (the job's trap stops the worker on the SIGTERM at the limit): a user
    asking for an earlier one (B:TERM@300) is passed on, and kit's script sets none beside it."""
    site = _site(tmp_path, "slurm", '["--signal=B:TERM@300"]')
    argv = SlurmScheduler(site).submit_argv(JobRequest("j", 1, 3600), Path("jobs/j.sh"), "logs")
    assert argv.count("--signal=B:TERM@300") == 1 and not [a for a in argv if a.startswith("--signal") and "300" not in a]


def test_oar_gets_them_after_kit_s_options_and_before_the_command(tmp_path: Path) -> None:
    site = _site(tmp_path, "oar", '["--notify", "mail:me@example.org"]')
    argv = OarScheduler(site).submit_argv(JobRequest("j", 1, 3600), Path("jobs/j.sh"), "logs")
    assert argv[-3:] == ["--notify", "mail:me@example.org", "bash jobs/j.sh"] and "-l" in argv[:-3]


@pytest.mark.parametrize(("scheduler", "args", "said"), [
    ("slurm", '["--time=2:00:00"]', "sets what kit sets"), ("slurm", '["-p", "gpu"]', "sets what kit sets"),
    ("oar", '["-l", "host=2"]', "sets what kit sets"), ("oar", '["-I"]', "sets what kit sets"),
    ("slurm", '["exclude=node07"]', "is not one option"), ("slurm", '["--x\\ny"]', "is not one option"),
    ("local", '["--exclude=a"]', "submit_args on a local site"),
    ("slurm", '["--exclude=node07 --mail-type=END"]', "is not one option"),   # two options in one word
    # what the parsers read as a reserved option: attached short values, bundles, unambiguous prefixes
    ("oar", '["-lhost=4,walltime=99:00"]', "(-l)"), ("oar", '["-qdefault"]', "(-q)"), ("oar", '["-texotic"]', "(-t)"),
    ("oar", '["-pcluster=1"]', "(-p)"), ("slurm", '["-t5"]', "(-t)"), ("slurm", '["-pdebug"]', "(-p)"),
    ("slurm", '["-G8"]', "(-G)"), ("slurm", '["-vt5"]', "(-t)"), ("slurm", '["--tim=5"]', "(--time)"),
    ("slurm", '["--partit=debug"]', "(--partition)"), ("slurm", '["--wra=id"]', "(--wrap)"),
    ("oar", '["--resou=host=2"]', "(--resource)"),
    ("slurm", '["--time 5"]', "is not one option"), ("slurm", '["--"]', "is not one option"),
    ("oar", '["--notify", "--"]', "is not one option"),
    # what would take the job away from what kit promises of it
    ("oar", '["-r", "2026-12-07 18:30:00"]', "(-r) books the job for a later start"),
    ("oar", '["--reserv=2026-12-07 18:30:00"]', "(--reservation) books the job"),
    ("slurm", '["--container-image=nvcr.io#nvidia/pytorch"]', "(--container-image) gives the job a container"),
    ("slurm", '["--container-mounts=/a:/b"]', "(--container-mounts)"), ("slurm", '["--get-user-env"]', "login environment"),
    ("slurm", '["--test-only"]', "submits nothing"), ("slurm", '["-W"]', "wait until the job ends"),
    ("slurm", '["--wait"]', "wait until the job ends"),
])
def test_what_would_clash_or_is_not_an_option_is_refused(tmp_path: Path, scheduler, args, said) -> None:
    with pytest.raises(ConfigError) as err:
        _site(tmp_path, scheduler, args)
    assert said in err.value.message and "submit_args" in err.value.message


@pytest.mark.parametrize(("scheduler", "args"), [
    ("slurm", '["--exclude=node07", "--mail-type=END", "--mail-user=me@example.org", "--mem-per-cpu=4G"]'),
    ("slurm", '["--nodelist=gpu[01-02]", "--comment=sweep of 85 languages", "-v", "--hint=nomultithread"]'),
    ("oar", '["--notify", "mail:me@example.org", "--hold"]'),
])
def test_options_kit_does_not_set_pass_whole(tmp_path: Path, scheduler, args) -> None:
    """Full option names kit has no key for, a value with spaces after '=', a flag: kept as written."""
    import tomllib

    assert _site(tmp_path, scheduler, args).submit_args == tuple(tomllib.loads(f"a = {args}")["a"])


def test_a_memory_option_beside_kit_s_own_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sites.toml").write_text('[site.x]\nscheduler = "slurm"\nmem_per_gpu_gb = 32\n'
                                         'submit_args = ["--mem-per-cpu=4G"]\n')
    with pytest.raises(ConfigError) as err:
        load_sites(tmp_path / "sites.toml")
    assert "--mem-per-cpu=4G" in err.value.message and "--mem-per-gpu" in err.value.message
    # without a memory key of kit's, the user's own memory option is theirs to give
    site = _site(tmp_path, "slurm", '["--mem-per-cpu=4G"]')
    assert "--mem-per-cpu=4G" in SlurmScheduler(site).submit_argv(JobRequest("j", 1, 3600), Path("j.sh"), "logs")


def test_mem_gb_0_asks_slurm_for_all_of_the_node_s_memory(tmp_path: Path) -> None:
    (tmp_path / "sites.toml").write_text('[site.x]\nscheduler = "slurm"\nmem_gb = 0\n')
    site = load_sites(tmp_path / "sites.toml").site["x"]
    lines = SlurmScheduler(site).prelude(JobRequest("j", 1, 3600, mem_gb=site.mem_gb), "logs")
    assert "#SBATCH --mem=0" in lines
