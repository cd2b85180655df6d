"""Remote results and inputs (kit.launch.remote) through the local frontend, and the multi-site merge.
The same code runs over the real ssh frontend in tests/e2e/test_oar_e2e.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit.config.sites import Site
from kit.errors import ConfigError
from kit.launch.frontend import Frontend
from kit.launch.remote import check_remote_paths, staged_inputs, sync_tree, tree_digest, upload_inputs
from kit.launch.sitestatus import merge_sites
from kit.plan import Pair
from kit.results.keys import PairState
from kit.results.status import PairStatus

LOCAL = Frontend("local")


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_mirror_gets_each_checkpoint_s_signed_statement_with_it(tmp_path):
    """A job that signs (KIT_SIGNING_KEY_PATH) leaves <run>.intoto.jsonl beside its checkpoint: pulled with
    it, and dropped with it when the site's is gone."""
    src = tree(tmp_path / "src", {"fr/a.json": "1", "fr/a.mllog": "m", "fr/a.intoto.jsonl": "e", "fr/a.other": "x"})
    dest = tmp_path / "mirror"
    assert sorted(sync_tree(LOCAL, str(src), dest, delete=True).fetched) == ["fr/a.intoto.jsonl", "fr/a.json",
                                                                              "fr/a.mllog"]
    (src / "fr" / "a.intoto.jsonl").unlink()
    assert sync_tree(LOCAL, str(src), dest, delete=True).removed == ["fr/a.intoto.jsonl"]


def test_a_mirror_gets_new_and_changed_files_and_loses_deleted_ones(tmp_path):
    src = tree(tmp_path / "src", {"en/a.json": "1", "fr/a.json": "2", "fr/a.mllog": "m", "fr/.a.json.x.tmp": "t",
                                  "report/x.csv": "c", "top.json": "t"})
    dest = tmp_path / "mirror"
    first = sync_tree(LOCAL, str(src), dest, delete=True)
    assert sorted(first.fetched) == ["en/a.json", "fr/a.json", "fr/a.mllog", "top.json"]   # lrb's top-level file too
    assert (dest / "fr" / "a.json").read_text() == "2"
    assert sync_tree(LOCAL, str(src), dest, delete=True).fetched == []          # nothing changed
    (src / "en" / "a.json").write_text("1 changed")
    os.utime(src / "en" / "a.json", (1_800_000_000, 1_800_000_000))
    (src / "fr" / "a.json").unlink()
    again = sync_tree(LOCAL, str(src), dest, delete=True)
    assert again.fetched == ["en/a.json"] and again.removed == ["fr/a.json"]
    assert (dest / "en" / "a.json").read_text() == "1 changed" and not (dest / "fr" / "a.json").exists()


def test_a_missing_remote_tree_is_empty_not_an_error_and_says_so(tmp_path):
    """No folder yet is no checkpoint yet, but said: a typo in `results` or an unmounted file system must
    not read as "nothing has run" without a word (kit run would submit finished pairs again)."""
    report = sync_tree(LOCAL, str(tmp_path / "nothing-yet"), tmp_path / "m", delete=True)
    assert report.listed == 0 and report.fetched == [] and report.absent
    assert "does not exist on the frontend" in report.notes()[0]
    (tmp_path / "empty").mkdir()
    report = sync_tree(LOCAL, str(tmp_path / "empty"), tmp_path / "m", delete=True)
    assert not report.absent and report.notes() == []


def test_a_pull_keeps_every_copy_it_replaces_and_writes_nothing_through_a_link(tmp_path):
    """A user's own file at a checkpoint's name, or a good copy the site's damaged one replaces: kept in
    .superseded/ first, never overwritten in place."""
    src = tree(tmp_path / "src", {"fr/a.json": "site's", "fr/a.mllog": "m"})
    dest = tree(tmp_path / "dest", {"fr/a.json": "mine", "fr/a.mllog": "m"})
    os.utime(dest / "fr" / "a.mllog", (1, 1))   # the same bytes: replaced, nothing to keep
    report = sync_tree(LOCAL, str(src), dest, delete=False)
    assert sorted(report.fetched) == ["fr/a.json", "fr/a.mllog"] and len(report.kept_aside) == 1
    assert (dest / "fr" / "a.json").read_text() == "site's"
    [kept] = (dest / "fr" / ".superseded").iterdir()
    assert kept.read_text() == "mine" and kept.name.startswith("a.json.")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "fr").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConfigError, match="is a link"):
        sync_tree(LOCAL, str(src), linked, delete=False)
    assert not (tmp_path / "elsewhere").exists()


def test_a_pull_skips_names_no_checkpoint_has_and_reads_past_a_login_banner(tmp_path, monkeypatch):
    import kit.launch.remote as remote

    src = tree(tmp_path / "src", {"fr/a.json": "1", "fr/bad\nname.json": "2", "fr/cr\rname.json": "3"})
    real = remote.run_bytes

    def with_banner(frontend, argv, data=b"", timeout_s=None):   # a login shell's profile prints first
        return b"Welcome: modules loaded\n" + real(frontend, argv, data, timeout_s)

    monkeypatch.setattr(remote, "run_bytes", with_banner)
    report = sync_tree(LOCAL, str(src), tmp_path / "m", delete=False)
    assert report.fetched == ["fr/a.json"] and len(report.skipped) == 2
    assert (tmp_path / "m" / "fr" / "a.json").read_text() == "1"


def test_hostile_folder_names_are_copied_literally(tmp_path):
    src = tree(tmp_path / "we ird $(touch PWNED)", {"en/x y.json": "1"})
    sync_tree(LOCAL, str(src), tmp_path / "m", delete=False)
    assert (tmp_path / "m" / "en" / "x y.json").read_text() == "1"
    assert not list(tmp_path.rglob("PWNED"))


def test_inputs_are_named_by_content_and_copied_once(tmp_path):
    bench = tree(tmp_path / "bench", {"manifest.json": "{}", "translations/en.csv": "a,b\n", ".git/x": "no"})
    roster = tmp_path / "roster.toml"
    roster.write_text('benchmark = "bench"\n')
    r, b, copies = staged_inputs(Path("/cluster/kit"), roster, bench)
    assert str(b).startswith("/cluster/kit/inputs/benchmark-") and str(r).startswith("/cluster/kit/inputs/roster-")
    assert staged_inputs(Path("/cluster/kit"), roster, bench)[1] == b                 # stable
    (bench / "translations" / "en.csv").write_text("a,b\nc,d\n")
    assert staged_inputs(Path("/cluster/kit"), roster, bench)[1] != b                 # content changes the name
    assert tree_digest(bench) != ""
    where = tmp_path / "remote"
    local_copies = {str(where / Path(k).name): v for k, v in copies.items()}
    upload_inputs(LOCAL, local_copies)
    bdir = where / Path(str(b)).name
    assert (bdir / "translations" / "en.csv").exists() and not (bdir / ".git").exists()
    (bdir / "manifest.json").write_text("kept")
    upload_inputs(LOCAL, local_copies)
    assert (bdir / "manifest.json").read_text() == "kept"                              # not copied twice


def test_remote_sites_need_absolute_cluster_paths():
    check_remote_paths(Site(name="n", scheduler="oar", frontend="nancy.g5k", runtime="host", root="/home/j/kit",
                            results="/home/j/r", python="python3"))
    with pytest.raises(ConfigError) as err:
        check_remote_paths(Site(name="n", scheduler="oar", frontend="nancy.g5k", root="/home/j/kit",
                                results="/home/j/r"))                                    # images = "images"
    assert "images = 'images' is relative" in str(err.value) and err.value.exit_code == 2
    with pytest.raises(ConfigError):
        check_remote_paths(Site(name="n", scheduler="oar", frontend="nancy.g5k", runtime="host", root="~/kit",
                                results="/r", python="python3"))


# ids not named "images": that keyword is the images tier's marker, which conftest deselects
@pytest.mark.parametrize("key", ["root", "scratch", "results", "images", "weights"], ids=lambda key: f"empty-{key}")
def test_an_empty_remote_path_is_refused_too(key):
    paths = {"root": "/home/j/kit", "results": "/home/j/r", "images": "/home/j/i", key: ""}
    with pytest.raises(ConfigError) as err:
        check_remote_paths(Site(name="n", scheduler="oar", frontend="nancy.g5k", **paths))
    assert f"{key} = '' is empty" in err.value.message and err.value.exit_code == 2
    assert f'{key} = "/' in err.value.fix


@pytest.mark.parametrize("key,value,meant", [
    ("root", "~/kit", "/home/<login>/kit"), ("root", "$HOME/kit", "/home/<login>/kit"),
    ("root", "${HOME}/kit/", "/home/<login>/kit"), ("results", "~/kit/results", "/home/<login>/kit/results"),
    ("root", "kit", "/home/<login>/kit"), ("root", ".", "/home/<login>/kit"), ("root", "", "/home/<login>/kit"),
    ("images", "images", "/home/<login>/kit/images"), ("results", "./results/", "/home/<login>/kit/results"),
    ("scratch", "", "/tmp"), ("weights", "~jdoe/hf-hub", "/home/jdoe/hf-hub"),
])
def test_the_fix_names_the_absolute_path_meant(key, value, meant):
    paths = {"root": "/home/j/kit", "results": "/home/j/r", "images": "/home/j/i", key: value}
    with pytest.raises(ConfigError) as err:
        check_remote_paths(Site(name="n", scheduler="oar", frontend="nancy.g5k", **paths))
    assert err.value.fix == f'write it absolute in [site.n], e.g. {key} = "{meant}"'


def st(lang: str, state: str, job: str | None = None) -> PairStatus:
    return PairStatus(Pair("m", lang), state, Path("x"), [f"why {state}"] if state != PairState.COMPLETE else [], job=job)


def test_several_sites_give_one_row_per_pair_the_most_advanced_state_wins():
    merged = merge_sites({
        "nancy": [st("de", PairState.COMPLETE, "1"), st("en", PairState.FAILED, "2"), st("fr", PairState.UNCLAIMED), st("ja", PairState.QUEUED, "4")],
        "grenoble": [st("de", PairState.FAILED, "5"), st("en", PairState.RUNNING, "6"), st("fr", PairState.UNCLAIMED), st("ja", PairState.TIMEOUT, "8")],
    })
    got = {s.pair.language: (s.state, s.job, s.reasons[0].split("]")[0] + "]") for s in merged}
    assert got == {"de": ("complete", "1", "[nancy]"), "en": ("running", "6", "[grenoble]"),
                   "fr": ("unclaimed", None, "[nancy]"), "ja": ("queued", "4", "[nancy]")}


def test_a_pull_copies_every_place_a_checkpoint_lies_and_no_hidden_folder(tmp_path):
    """lrb's top-level files and a batch's language folders come along; kit's .superseded/ copies and a
    hidden folder's files do not (and are not copied again on every pull)."""
    src = tree(tmp_path / "src", {"en/a.json": "1", "top.json": "2", "batch/fr/c.json": "3", ".trash/x.json": "4",
                                  "en/.superseded/a.json.1": "5", "en/.superseded/old.json": "6"})
    first = sync_tree(LOCAL, str(src), tmp_path / "m", delete=False)
    assert sorted(first.fetched) == ["batch/fr/c.json", "en/a.json", "top.json"]
    assert sync_tree(LOCAL, str(src), tmp_path / "m", delete=False).fetched == []


def test_a_mirror_is_kept_when_its_remote_folder_is_gone(tmp_path):
    """An unmounted file system or a typo in `results` must not empty kit's copy (status would then call
    every pair unclaimed, and run would submit them again)."""
    from kit.errors import SubmitError

    src = tree(tmp_path / "src", {"en/a.json": "1"})
    sync_tree(LOCAL, str(src), tmp_path / "m", delete=True)
    src.rename(tmp_path / "gone")
    with pytest.raises(SubmitError, match="does not exist on the frontend, though 1 file"):
        sync_tree(LOCAL, str(src), tmp_path / "m", delete=True)
    assert (tmp_path / "m" / "en" / "a.json").read_text() == "1"


def test_a_folder_that_cannot_be_reached_is_not_called_absent(tmp_path):
    from kit.errors import SubmitError

    parent = tmp_path / "locked"
    parent.mkdir()
    (parent / "results").mkdir()
    if os.geteuid() == 0:   # root lists any folder: a parent that is a file stands for one it cannot list
        (tmp_path / "file").write_text("x")
        with pytest.raises(SubmitError, match="cannot reach"):
            sync_tree(LOCAL, str(tmp_path / "file" / "results"), tmp_path / "m", delete=True)
        return
    parent.chmod(0o000)
    try:
        with pytest.raises(SubmitError, match="cannot reach"):
            sync_tree(LOCAL, str(parent / "results"), tmp_path / "m", delete=True)
    finally:
        parent.chmod(0o755)


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_pull_never_keeps_a_copy_aside_through_a_link_or_into_a_file(tmp_path, kind):
    src = tree(tmp_path / "src", {"en/a.json": "site's"})
    dest = tree(tmp_path / "dest", {"en/a.json": "mine"})
    keep = dest / "en" / ".superseded"
    if kind == "link":
        (tmp_path / "elsewhere").mkdir()
        keep.symlink_to(tmp_path / "elsewhere")
    else:
        keep.write_text("not a folder")
    with pytest.raises(ConfigError, match="not the folder kit keeps replaced copies in"):
        sync_tree(LOCAL, str(src), dest, delete=False)
    assert (dest / "en" / "a.json").read_text() == "mine" and not any((tmp_path / "elsewhere").glob("*"))


def test_a_file_where_a_folder_of_the_copy_must_be_is_refused_before_anything_is_copied(tmp_path):
    src = tree(tmp_path / "src", {"en/a.json": "1", "batch/fr/c.json": "2"})
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "batch").write_text("my notes")
    with pytest.raises(ConfigError, match="where the copy needs a folder"):
        sync_tree(LOCAL, str(src), dest, delete=False)
    assert not (dest / "en").exists() and (dest / "batch").read_text() == "my notes"


def test_a_mirror_refresh_never_removes_files_through_a_link(tmp_path):
    """A linked folder inside the mirror, or a mirror that is a link: what lies where the link points is
    neither listed as the mirror's nor removed by its refresh."""
    src = tree(tmp_path / "src", {"en/a.json": "1", "new-models/fr/b.json": "2"})
    mirror = tmp_path / "mirror"
    sync_tree(LOCAL, str(src), mirror, delete=True)
    outside = tree(tmp_path / "outside", {"fr/mine.json": "keep", "precious.json": "keep"})
    import shutil
    shutil.rmtree(mirror / "new-models")
    (mirror / "new-models").symlink_to(outside)
    with pytest.raises(ConfigError, match="is a link"):
        sync_tree(LOCAL, str(src), mirror, delete=True)
    assert (outside / "fr" / "mine.json").read_text() == "keep" and (outside / "precious.json").exists()
    linked = tmp_path / "linked-mirror"
    linked.symlink_to(outside)
    with pytest.raises(ConfigError, match="is a link"):
        sync_tree(LOCAL, str(src), linked, delete=True)
    assert (outside / "fr" / "mine.json").read_text() == "keep"


def test_a_linked_language_folder_on_the_site_is_copied_as_every_reader_reads_it(tmp_path):
    scratch = tree(tmp_path / "scratch", {"x.json": "1"})
    src = tree(tmp_path / "src", {"en/a.json": "2"})
    (src / "it").symlink_to(scratch)
    report = sync_tree(LOCAL, str(src), tmp_path / "m", delete=False)
    assert sorted(report.fetched) == ["en/a.json", "it/x.json"]
    assert (tmp_path / "m" / "it" / "x.json").read_text() == "1" and not (tmp_path / "m" / "it").is_symlink()


def test_a_local_site_whose_results_folder_is_gone_after_submissions_is_said(tmp_path, capsys):
    from kit.launch.site import resolve_site
    from kit.launch.sitestatus import said_if_absent
    from kit.launch.tracking import records_file

    site = resolve_site(Site(name="l", scheduler="slurm", results="gone"), tmp_path)
    said_if_absent(site)   # nothing submitted yet: a first sweep has no folder
    assert capsys.readouterr().err == ""
    records_file(site.state_dir, "l").parent.mkdir(parents=True)
    records_file(site.state_dir, "l").write_text("")
    said_if_absent(site)
    assert "does not exist, though jobs were submitted there" in capsys.readouterr().err
