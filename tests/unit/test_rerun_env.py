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
