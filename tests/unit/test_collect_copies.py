"""`kit collect` (kit.results.collect): one pair held by two sites is one file when the files are the
same bytes, and a refused duplicate when they differ."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest_checkpoints import make_checkpoint, predictions_of, rewrite, seal

from kit.plan import Pair
from kit.results.collect import plan_collect

PAIR = Pair("org/m", "en")


def _sites(tmp_path: Path) -> tuple[Path, Path]:
    """Site a holds org/m [en]; site b a byte-identical copy of that file (and of its log)."""
    a = make_checkpoint(tmp_path / "a", PAIR.run, PAIR.language, predictions_of([("yes", "yes"), ("no", "no")]))
    b = tmp_path / "b" / a.relative_to(tmp_path / "a")
    b.parent.mkdir(parents=True)
    shutil.copy2(a, b)
    shutil.copy2(a.with_suffix(".mllog"), b.with_suffix(".mllog"))
    return a, b


def _plan(tmp_path: Path):
    return plan_collect([("a", tmp_path / "a"), ("b", tmp_path / "b")], [PAIR], lambda pair: None)


def test_the_same_checkpoint_at_two_sites_is_collected_once(tmp_path):
    a, _ = _sites(tmp_path)
    plan = _plan(tmp_path)
    assert plan.problems == []
    assert plan.chosen == {PAIR: ("a", a)}


def test_two_different_checkpoints_of_one_pair_are_still_refused(tmp_path):
    a, b = _sites(tmp_path)
    seal(rewrite(b, lambda data: data["metadata"].update(duration_seconds=2.0)))   # another job's: other bytes
    plan = _plan(tmp_path)
    assert plan.problems == [f"duplicate: {PAIR} in a ({a}) and b ({b}) differ"]


def test_a_checkpoint_changed_since_its_job_logged_it_is_refused(tmp_path):
    from kit.files import file_sha256

    a = make_checkpoint(tmp_path / "a", PAIR.run, PAIR.language, predictions_of([("yes", "yes"), ("no", "no")]))
    log = a.with_suffix(".mllog")
    log.write_text(':::MLLOG {"key": "run_stop", "metadata": {"checkpoint_sha256": "%s"}}\n' % file_sha256(a),
                   encoding="utf-8")
    plan = plan_collect([("a", tmp_path / "a")], [PAIR], lambda pair: None)
    assert plan.problems == [] and plan.chosen == {PAIR: ("a", a)}
    rewrite(a, lambda data: data["metadata"].update(duration_seconds=2.0))   # still valid, other bytes
    plan = plan_collect([("a", tmp_path / "a")], [PAIR], lambda pair: None)
    assert plan.problems[0].startswith(f"edited: a: {a}: sha256 ") and plan.problems[1:] == ["missing: org/m [en]"]
    assert "changed after the job wrote it" in plan.problems[0] and PAIR not in plan.chosen


def test_one_site_name_given_twice_is_bad_input(tmp_path):
    from click.testing import CliRunner

    from kit.cli.main import cli

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r = CliRunner().invoke(cli, ["collect", "--from", f"nancy={tmp_path / 'a'}", "--from", f"nancy={tmp_path / 'b'}",
                                 "-o", str(tmp_path / "out")])
    assert isinstance(r.exception, Exception) and "site 'nancy' is given twice" in str(r.exception)
    assert not (tmp_path / "out").exists()


def test_a_collect_written_again_links_the_files_that_come_out_the_same(tmp_path):
    """`kit collect --force` over its own earlier output: an unchanged pair's checkpoint and log are the
    earlier files (same inodes), a changed pair's are copied anew, and every file is its source's bytes."""
    import os

    from kit.results.collect import install_collect

    other = Pair("org/m", "fr")
    paths = {pair: make_checkpoint(tmp_path / "a", pair.run, pair.language,
                                   predictions_of([("yes", "yes"), ("no", "no")])) for pair in (PAIR, other)}

    def collect() -> Path:
        plan = plan_collect([("a", tmp_path / "a")], [PAIR, other], lambda pair: None)
        assert plan.problems == []
        return install_collect(plan, tmp_path / "out", force=True)

    out = collect()
    copies = {pair: out / path.relative_to(tmp_path / "a") for pair, path in paths.items()}
    before = {pair: (os.stat(p).st_ino, os.stat(p.with_suffix(".mllog")).st_ino) for pair, p in copies.items()}
    seal(rewrite(paths[other], lambda data: data["metadata"].update(duration_seconds=2.0)))
    collect()
    assert (os.stat(copies[PAIR]).st_ino, os.stat(copies[PAIR].with_suffix(".mllog")).st_ino) == before[PAIR]
    assert os.stat(copies[other]).st_ino != before[other][0]
    for pair, path in paths.items():
        assert copies[pair].read_bytes() == path.read_bytes()
        assert copies[pair].with_suffix(".mllog").read_bytes() == path.with_suffix(".mllog").read_bytes()


def test_two_sites_system_descriptions_of_one_name_are_one_when_alike_and_refused_when_not(tmp_path):
    """The merged systems/ folder holds one file of a name: two sites' differing descriptions are a
    problem (one would silently replace the other), identical ones are one file."""
    _sites(tmp_path)
    for site in ("a", "b"):
        (tmp_path / site / "systems").mkdir()
        (tmp_path / site / "systems" / "node-1.json").write_text('{"node": "node-1"}')
    assert _plan(tmp_path).problems == []
    (tmp_path / "b" / "systems" / "node-1.json").write_text('{"node": "other-site"}')
    assert _plan(tmp_path).problems == [
        f"duplicate: systems/node-1.json of a ({tmp_path / 'a' / 'systems' / 'node-1.json'}) and of b "
        f"({tmp_path / 'b' / 'systems' / 'node-1.json'}) differ: one would replace the other"]


def test_a_collect_carries_each_checkpoint_s_signed_statement(tmp_path):
    """Each checkpoint's envelope (<stem>.intoto.jsonl, kit.results.store.envelope_path) goes with it, as in
    a release; written again, an unchanged one is the earlier file (the same inode)."""
    from kit.results.collect import install_collect
    from kit.results.store import envelope_path

    a = make_checkpoint(tmp_path / "a", PAIR.run, PAIR.language, predictions_of([("yes", "yes"), ("no", "no")]))
    envelope_path(a).write_text('{"payloadType": "application/vnd.in-toto+json"}\n')
    plan = plan_collect([("a", tmp_path / "a")], [PAIR], lambda pair: None)
    assert plan.problems == []
    out = install_collect(plan, tmp_path / "out")
    copy = envelope_path(out / a.relative_to(tmp_path / "a"))
    assert copy.read_bytes() == envelope_path(a).read_bytes()
    inode = os.stat(copy).st_ino
    install_collect(plan, tmp_path / "out", force=True)
    assert os.stat(copy).st_ino == inode


def test_an_envelope_that_cannot_be_read_stops_the_collect_naming_it(tmp_path):
    """Run in a process of its own without the capabilities that let root read any file (setpriv), so that
    the mode holds as it does for a user's kit."""
    import subprocess
    import sys

    from kit.results.store import envelope_path

    a = make_checkpoint(tmp_path / "a", PAIR.run, PAIR.language, predictions_of([("yes", "yes"), ("no", "no")]))
    envelope_path(a).write_text("{}\n")
    envelope_path(a).chmod(0)
    script = ("import sys; from pathlib import Path; from kit.errors import ConfigError; from kit.plan import Pair; "
              "from kit.results.collect import install_collect, plan_collect\n"
              "root = Path(sys.argv[1]); plan = plan_collect([('a', root / 'a')], [Pair('org/m', 'en')], lambda p: None)\n"
              "try:\n    install_collect(plan, root / 'out')\nexcept ConfigError as exc:\n    print(exc.one_line())\n")
    argv = [sys.executable, "-c", script, str(tmp_path)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run as root without reading every file"
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search",
                "--inh-caps=-dac_override,-dac_read_search", *argv]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "intoto.jsonl: cannot be read" in r.stdout, r.stdout
    assert not (tmp_path / "out").exists()
