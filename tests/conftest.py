"""Suite-wide test configuration.

Under CI=true a skipped test fails the run: CI never goes green by skipping."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import programs

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
LRB = SHARED / "third_party" / "lrb"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI") == "true" and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which counts as a failure: {reason}"


_fast_tier_programs = programs.Recorder()


def pytest_configure(config):
    """In the fast tier (KIT_TEST_TIER=fast, as scripts/test.sh and `make test-fast` run it), record
    every program the session starts (tests/programs.py)."""
    if os.environ.get("KIT_TEST_TIER") == "fast":
        _fast_tier_programs.__enter__()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """The fast tier fails when it started a program that a brand-new machine lacks while the
    fast tier runs (tests/programs.py says which machine that is)."""
    if os.environ.get("KIT_TEST_TIER") != "fast":
        return
    _fast_tier_programs.__exit__()
    lines: list[str] = []
    if not programs.check_fast_tier(_fast_tier_programs.started, lines.append):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("-", "programs a brand-new machine lacks while the fast tier runs", red=True)
        for line in lines:
            if reporter is not None:
                reporter.write_line(line, red=True)
            else:
                print(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(config, items):
    """The images tier (tests/images, marker `images`: six image builds) runs only when asked for
    with KIT_IMAGES_TIER=1 (`make test-images`); any other run deselects it, whatever its -m says,
    so no tier expression (nor CI=true, where a skip fails) can start those builds by accident."""
    if os.environ.get("KIT_IMAGES_TIER") == "1":
        return
    keep = [item for item in items if "images" not in item.keywords]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if "images" in item.keywords])
        items[:] = keep


# A test's tier is its first marker in this order; a test with none of them is in the fast tier.
TIERS = ("images", "e2e", "integration", "slow")
_tier_times: dict[str, list[float]] = {}   # tier -> [seconds, passed, failed]


def _tier(report) -> str:
    return next((t for t in TIERS if t in report.keywords), "fast")


def pytest_runtest_logreport(report):
    row = _tier_times.setdefault(_tier(report), [0.0, 0, 0])
    row[0] += report.duration
    row[1] += report.when == "call" and report.outcome == "passed"
    row[2] += report.outcome == "failed"


def pytest_terminal_summary(terminalreporter):
    """Seconds, passes and failures per tier; also appended to $KIT_TEST_TIMES (scripts/test.sh's table)."""
    if not _tier_times:
        return
    terminalreporter.write_sep("-", "time by tier")
    lines = []
    for tier in ("fast", "slow", "integration", "e2e", "images"):
        if tier in _tier_times:
            seconds, passed, failed = _tier_times[tier]
            terminalreporter.write_line(f"{tier:<12} {seconds:8.1f} s  {passed} passed, {failed} failed")
            lines.append(f"tests: {tier} tier (sum of test times)\t{seconds:.1f}\t{passed}\t{failed}\n")
    if os.environ.get("KIT_TEST_TIMES"):
        with open(os.environ["KIT_TEST_TIMES"], "a", encoding="utf-8") as f:
            f.writelines(lines)


@pytest.fixture(scope="session")
def lrb_dir() -> Path:
    """The shared lrb third-party data (benchmark and archived results)."""
    if not LRB.is_dir():
        pytest.skip(f"shared third-party data not found at {LRB}")
    return LRB


@pytest.fixture(scope="session")
def lrb_bench(lrb_dir, tmp_path_factory) -> Path:
    """A copy of the shared lrb benchmark folder with a generative prompt.txt, which the shared copy
    lacks (lrb's own is not vendored; kit's default stands in for it here, never by itself)."""
    import shutil

    from kit.config.kinds.lrb.benchmark import DEFAULT_GENERATE_PROMPT

    dest = tmp_path_factory.mktemp("lrb") / "data"
    shutil.copytree(lrb_dir / "data", dest)
    shutil.copyfile(DEFAULT_GENERATE_PROMPT, dest / "prompt.txt")
    return dest


@pytest.fixture(scope="session")
def cpu_image_env() -> Iterator[dict[str, str]]:
    """KIT_IMAGES_LOCK / KIT_IMAGES_DIR of a session lock in which the CPU variant of the
    transformers-5.17 image is built (offline, from the cached wheelhouse; Docker's layer cache
    makes this quick when the images tests built it already). Root on Debian only."""
    import subprocess
    import sys

    if os.geteuid() != 0 or not Path("/etc/debian_version").is_file():
        pytest.skip("needs root on Debian: scripts/images/tools.sh starts dockerd and makes the bases")
    r = subprocess.run(["bash", str(REPO / "scripts/images/tools.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"scripts/images/tools.sh failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
    import shutil
    import tempfile

    # under /var/tmp, world-traversable: containers run as uid 1000
    lock_dir = Path(tempfile.mkdtemp(prefix="kit-cpu-image-", dir="/var/tmp"))
    os.chmod(lock_dir, 0o755)
    env = {"KIT_IMAGES_LOCK": str(lock_dir / "images.lock.json"), "KIT_IMAGES_DIR": str(lock_dir / "images")}
    wheelhouse = os.environ.get("KIT_WHEELHOUSE") or str(Path.home() / ".cache" / "kit" / "wheelhouse")
    r = subprocess.run([sys.executable, "-m", "kit", "images", "build", "transformers-5.17", "--variant", "cpu",
                        "--wheelhouse", wheelhouse, "--quiet"], cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, **env}, timeout=2400)
    if r.returncode != 0:
        shutil.rmtree(lock_dir, ignore_errors=True)
        pytest.fail(f"building the CPU image failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}", pytrace=False)
    yield env
    # the lock and its SIF/sqsh take about 0.9 GB; a test session must not leave them behind
    shutil.rmtree(lock_dir, ignore_errors=True)
