"""The engine settings a job ran with (provenance.engine_env: vLLM's VLLM_*, thread counts) are recorded
by the worker and given to `kit reproduce`'s rerun in every runtime: the images tier's vLLM rerun in
Docker lacked the CPU KV-cache size the sweep's job had (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import ConfigError
from kit.repro import rerun
from kit.repro.resolve import ResolvedImage
from kit.config.engine_env import engine_environment


def test_the_worker_records_engine_settings_and_never_a_secret():
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_API_KEY": "s3cret", "OMP_NUM_THREADS": "2", "HOME": "/root",
           "HF_TOKEN": "x", "VLLM_CPU_OMP_THREADS_BIND": "all"}
    assert engine_environment(env) == {"OMP_NUM_THREADS": "2", "VLLM_CPU_KVCACHE_SPACE": "1",
                                       "VLLM_CPU_OMP_THREADS_BIND": "all"}


def test_only_well_formed_recorded_settings_are_taken():
    result = {"provenance": {"engine_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "bad name": "x", "VLLM_X": 3,
                                            "VLLM_Y": "a\0b"}}}
    assert rerun.recorded_engine_env(result) == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    assert rerun.recorded_engine_env({"provenance": {"engine_env": ["VLLM_X"]}}) == {}
    assert rerun.recorded_engine_env({}) == {}


def test_a_result_file_cannot_give_the_rerun_a_variable_that_runs_code():
    """provenance.engine_env is data from the file being reproduced: only the engine settings --engine-env
    takes come through, never PYTHONPATH, LD_PRELOAD, PATH or a secret-looking name."""
    result = {"provenance": {"engine_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONPATH": "/tmp/evil",
                                            "LD_PRELOAD": "/tmp/evil.so", "PATH": "/tmp/evil", "VLLM_API_KEY": "x",
                                            "OMP_NUM_THREADS": "2", "PYTHONSTARTUP": "/tmp/evil.py"}}}
    assert rerun.recorded_engine_env(result) == {"OMP_NUM_THREADS": "2", "VLLM_CPU_KVCACHE_SPACE": "1"}


def test_a_host_rerun_never_imports_a_kit_folder_from_where_it_runs(monkeypatch, tmp_path):
    """The host rerun's interpreter keeps its working folder off the import path (-P): a release folder
    holding a `kit/` package cannot run in place of the installed kit."""
    import subprocess
    import sys

    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "__init__.py").write_text(f"open({str(tmp_path / 'PWNED')!r}, 'w').write('x')\n")
    (tmp_path / "kit" / "__main__.py").write_text("raise SystemExit(3)\n")
    seen = []
    real = subprocess.run

    def run(argv, **kwargs):
        seen.append(argv)
        return real([*argv[:4], "--version"], **{**kwargs, "cwd": tmp_path})   # the same interpreter and flags

    monkeypatch.setattr(rerun.subprocess, "run", run)
    image = ResolvedImage("host", None, None, None, True, "")
    status, output = rerun.run_in_image(image, ["shard", "x"], [], {"PATH": "/usr/bin:/bin"})
    assert seen[0][:4] == [sys.executable, "-P", "-m", "kit"]
    assert status == 0 and "kit" in output and not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("runtime", ["docker", "apptainer", "sqsh", "host"])
def test_the_rerun_gets_the_recorded_engine_settings_in_every_runtime(monkeypatch, tmp_path, runtime):
    seen = {}

    def fake_run(image, kit_args, binds, env):
        seen.update(env)
        return 1, "no checkpoint written"

    monkeypatch.setattr(rerun, "run_in_image", fake_run)
    monkeypatch.setattr(rerun, "roster_for", lambda *a, **k: "")
    result = {"metadata": {"run": "org/m", "model_id": "org/m", "language": "en", "model_revision": "a" * 40},
              "provenance": {"engine_env": {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "2"}}}
    image = ResolvedImage(runtime, None if runtime == "host" else "ref", "sha256:" + "1" * 64, None, True, "")
    with pytest.raises(ConfigError, match="the rerun wrote no checkpoint"):
        rerun.rerun_pair(result, image, tmp_path, None, tmp_path / "work")
    assert seen["VLLM_CPU_KVCACHE_SPACE"] == "1" and seen["OMP_NUM_THREADS"] == "2"
    assert seen["HF_HUB_OFFLINE"] == "1"   # kit's own offline settings are never overridden


def test_the_rerun_writes_where_no_other_user_reaches_and_its_checkpoint_is_held_like_the_result(monkeypatch, tmp_path):
    """The folder a container of another uid may write (mode 777) lies in kit's private one (700), so no other
    user of the machine can swap the rerun's roster or checkpoint; and what the rerun wrote is held to the
    sealed evidence policy the result was (here: a checkpoint without its job's log)."""
    from conftest_checkpoints import make_checkpoint, predictions_of

    from kit.errors import RerunError
    from kit.results import keys

    seen = {}

    def fake_run(image, kit_args, binds, env):
        out = Path(kit_args[kit_args.index("--results") + 1])
        seen.update(binds=binds, out=out)
        written = make_checkpoint(out, "org/m", "en", predictions_of([(keys.YES, keys.YES), (keys.NO, keys.NO)]))
        written.with_suffix(".mllog").unlink()
        return 0, "done"

    monkeypatch.setattr(rerun, "run_in_image", fake_run)
    monkeypatch.setattr(rerun, "roster_for", lambda *a, **k: "")
    result = {"metadata": {"run": "org/m", "model_id": "org/m", "language": "en", "model_revision": "a" * 40},
              "provenance": {}}
    image = ResolvedImage("apptainer", "ref", "sha256:" + "1" * 64, None, True, "")
    work = tmp_path / "work"
    with pytest.raises(RerunError, match="the rerun's checkpoint does not hold: .*log .*missing"):
        rerun.rerun_pair(result, image, tmp_path, None, work)
    assert work.stat().st_mode & 0o777 == 0o700
    assert seen["out"].parent.parent == work and str(work) not in seen["binds"]   # its inner folder is bound
    assert seen["out"].stat().st_mode & 0o777 == 0o777


def test_a_result_is_not_reproduced_against_itself(tmp_path):
    from kit.repro.reproduce import same_file

    a = tmp_path / "a.json"
    a.write_text("{}", encoding="utf-8")
    (tmp_path / "link.json").symlink_to(a)
    assert same_file(tmp_path / "link.json", a) and not same_file(tmp_path / "missing.json", a)
