"""The set-up scripts on a cold machine: every venv script run with an empty wheel cache, an empty
HOME and no venv, through a stand-in interpreter that fakes `python -m venv` and pip (no download,
no compiling) and records every call. What is tested is the scripts' own logic on the cold path:
that they go all the way, cache what they build, record their stamp, and that a failing step ends
the script with its name and the last lines of its log, never silently (an empty wheel cache once
ended llamacpp-venv.sh with exit 1 and no output under `set -e`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The stand-in interpreter. `-m venv DIR` makes DIR/bin/python a link to itself; pip subcommands
# succeed (or fail on request); `-c CODE` runs the real Python only for the scripts' own checks
# (version, pyproject), and otherwise stands for a passing import check.
FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "$0 $*" >> "$FAKE_LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "${@: -1}/bin" && ln -sf "$FAKE_SELF" "${@: -1}/bin/python"; exit 0
fi
if [ "$1" = -m ] && [ "$2" = pip ]; then
  case "$3" in
    show) exit 1 ;;
    wheel)
      [ -z "${FAKE_SLOW_WHEEL:-}" ] || sleep "$FAKE_SLOW_WHEEL"
      if [ -n "${FAKE_FAIL_WHEEL:-}" ]; then echo "CMake Error: the compiler broke (fake)"; exit 1; fi
      out=; prev=; for a in "$@"; do [ "$prev" = -w ] && out=$a; prev=$a; done
      spec=${*: -1}; mkdir -p "$out" && touch "$out/llama_cpp_python-${spec#*==}-cp311-cp311-linux_x86_64.whl"
      exit 0 ;;
  esac
  if [ -n "${FAKE_FAIL_PIP:-}" ] && [[ "$*" == *"$FAKE_FAIL_PIP"* ]]; then
    echo "ERROR: No matching distribution found for $FAKE_FAIL_PIP (fake)"; exit 1
  fi
  exit 0
fi
if [ "$1" = -c ]; then
  case "$2" in *tomllib*|*version_info*) exec "$REAL_PYTHON" "$@" ;; esac
  if [ -n "${FAKE_FAIL_IMPORT:-}" ]; then echo "ModuleNotFoundError: No module named 'fake'" >&2; exit 1; fi
  exit 0
fi
echo "fake python: unexpected call: $*" >&2; exit 99
"""

# script argv, the variable naming the venv it sets up, the stamp it writes there when done
SCRIPTS = {
    "venv": (["scripts/venv.sh"], "KIT_VENV", ".kit-installed"),
    "llamacpp": (["scripts/backends/llamacpp-venv.sh"], "KIT_LLAMACPP_VENV", ".kit-llamacpp"),
    "vllm": (["scripts/backends/vllm-venv.sh"], "KIT_VLLM_VENV", ".kit-vllm"),
    "gliner2": (["scripts/backends/gl-venv.sh", "gliner2"], "KIT_GLINER2_VENV", ".kit-gliner2"),
    "gliclass": (["scripts/backends/gl-venv.sh", "gliclass"], "KIT_GLICLASS_VENV", ".kit-gliclass"),
}


@pytest.fixture
def cold(tmp_path) -> dict[str, str]:
    """An environment with an empty HOME and wheel cache, the fake interpreter as PYTHON, and fake
    build tools first in PATH (so no apt-get install runs, even as root)."""
    home, tools = tmp_path / "home", tmp_path / "tools"
    home.mkdir()
    tools.mkdir()
    fake = tools / "python3"
    fake.write_text(FAKE_PYTHON)
    for name, body in (("gcc", "echo 12.2.0"), ("g++", "true"), ("cmake", "true")):
        (tools / name).write_text(f"#!/bin/sh\n{body}\n")
    for f in tools.iterdir():
        f.chmod(0o755)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "PIP_", "VIRTUAL_ENV"))}
    return {**keep, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PYTHON": str(fake),
            "FAKE_SELF": str(fake), "FAKE_LOG": str(tmp_path / "calls.log"), "REAL_PYTHON": sys.executable,
            "PATH": f"{tools}:{os.environ['PATH']}", "KIT_LOG_DIR": str(tmp_path / "logs")}


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def calls(env: dict[str, str]) -> list[str]:
    log = Path(env["FAKE_LOG"])
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_cold_set_up_runs_to_the_end_and_a_second_run_does_nothing(name, cold, tmp_path):
    argv, var, stamp = SCRIPTS[name]
    venv = tmp_path / f"venv-{name}"
    env = {**cold, var: str(venv), "KIT_WHEEL_CACHE": str(tmp_path / "wheels")}
    first = run(argv, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"{venv} ready" in first.stdout
    assert (venv / "bin" / "python").exists() and (venv / stamp).is_file()
    n = len(calls(env))
    assert any(" -m pip install" in c for c in calls(env))
    second = run(argv, env)
    assert second.returncode == 0 and f"{venv} is up to date" in second.stdout, second.stdout + second.stderr
    assert not any(" -m pip install" in c for c in calls(env)[n:]), calls(env)[n:]


# a step made to fail -> what stderr must say: the step, then its log's last lines
FAILURES = {
    "pip": ({"FAKE_FAIL_PIP": "install"}, ["ERROR: pip install in {venv} failed",
                                          "No matching distribution found for install (fake)"]),
    "import": ({"FAKE_FAIL_IMPORT": "1"}, ["does not import in {venv}", "No module named 'fake'"]),
}


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("name", SCRIPTS)
def test_a_failing_step_is_named_with_its_log_and_leaves_no_stamp(name, failure, cold, tmp_path):
    argv, var, stamp = SCRIPTS[name]
    venv = tmp_path / f"venv-{name}"
    fail_env, said = FAILURES[failure]
    r = run(argv, {**cold, var: str(venv), "KIT_WHEEL_CACHE": str(tmp_path / "wheels"), **fail_env})
    assert r.returncode == 1
    for text in said:
        assert text.format(venv=venv) in r.stderr, r.stderr
    assert not (venv / stamp).exists()


def test_llamacpp_with_an_empty_wheel_cache_builds_caches_and_installs_the_wheel(cold, tmp_path):
    cache = tmp_path / "wheels"
    env = {**cold, "KIT_WHEEL_CACHE": str(cache)}
    r = run(["scripts/backends/llamacpp-venv.sh", str(tmp_path / "v1")], env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "building llama-cpp-python 0.3.36" in r.stdout
    (entry,) = cache.glob("llama-cpp-python-0.3.36-*")
    (wheel,) = entry.glob("llama_cpp_python-0.3.36-*.whl")
    assert "version=0.3.36" in (entry / "BUILD_INFO").read_text() and (entry / "build.log").is_file()
    assert any(f"install -q --force-reinstall --no-deps {wheel}" in c for c in calls(env))
    # a second venv on the same machine takes the cached wheel: no second build
    n = len(calls(env))
    r = run(["scripts/backends/llamacpp-venv.sh", str(tmp_path / "v2")], env)
    assert r.returncode == 0 and f"using cached {wheel}" in r.stdout, r.stdout + r.stderr
    assert not any(" -m pip wheel" in c for c in calls(env)[n:])


def test_llamacpp_wheel_only_prints_the_cached_wheel_last(cold, tmp_path):
    env = {**cold, "KIT_WHEEL_CACHE": str(tmp_path / "wheels")}
    r = run(["scripts/backends/llamacpp-venv.sh", "--wheel"], env)
    assert r.returncode == 0, r.stderr
    wheel = Path(r.stdout.splitlines()[-1])
    assert wheel.is_file() and wheel.name.startswith("llama_cpp_python-0.3.36-")
    assert not any(" -m pip install" in c for c in calls(env))


def test_llamacpp_failed_build_names_the_step_shows_the_log_and_caches_nothing(cold, tmp_path):
    cache = tmp_path / "wheels"
    r = run(["scripts/backends/llamacpp-venv.sh", str(tmp_path / "v")],
            {**cold, "KIT_WHEEL_CACHE": str(cache), "FAKE_FAIL_WHEEL": "1"})
    assert r.returncode == 1
    assert "ERROR: building the llama-cpp-python 0.3.36 wheel failed" in r.stderr
    assert "CMake Error: the compiler broke (fake)" in r.stderr
    assert not list(cache.glob("llama-cpp-python-0.3.36-*/*.whl"))
    (log,) = cache.glob("*.build.log")       # kept for reading after the failure
    assert "CMake Error" in log.read_text()
    assert not list(cache.glob(".build-*"))  # no half-built folder left


def test_two_llamacpp_set_ups_at_once_build_the_wheel_once(cold, tmp_path):
    env = {**cold, "KIT_WHEEL_CACHE": str(tmp_path / "wheels"), "FAKE_SLOW_WHEEL": "1"}
    results: list[subprocess.CompletedProcess] = []
    threads = [threading.Thread(target=lambda v=v: results.append(run(["scripts/backends/llamacpp-venv.sh", str(v)], env)))
               for v in (tmp_path / "a", tmp_path / "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert sum(" -m pip wheel" in c for c in calls(env)) == 1
    assert sum("waiting for it" in r.stdout for r in results) == 1


def test_the_error_trap_names_a_silent_failure(tmp_path):
    """What ended llamacpp-venv.sh silently: a function whose loop fails, called in $(...)."""
    script = tmp_path / "s.sh"
    script.write_text(f"set -euo pipefail\n. {REPO}/scripts/dev/lib.sh\n"
                      'first() { local f; for f in /nonexistent/*.whl; do [ -f "$f" ] && echo "$f"; done; }\n'
                      "w=$(first)\necho unreachable\n")
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, env={**os.environ, "KIT_LOG_DIR": str(tmp_path)})
    assert r.returncode == 1 and "unreachable" not in r.stdout
    assert "ERROR: `w=$(first)` exited 1" in r.stderr, r.stderr
