"""Shared e2e fixtures: one `kit demo` run per session, reused by the e2e modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e_helpers import kit


@pytest.fixture(scope="session")
def demo_env(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "KIT_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1"}
    return root, env


@pytest.fixture(scope="session")
def first_demo(demo_env):
    root, env = demo_env
    r = kit("demo", cwd=root, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r
