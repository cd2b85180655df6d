"""The output contract (kit.outputs), held to every command that writes a folder: collect, release,
report, export and reproduce. Each case is one a careless or hostile user met (issue 29): a folder
of the user's own files replaced, a forged inventory, files added to or changed in an earlier
output, links inside it, an output that is a file or a device, a full or read-only disk. Each must
end in one error line, exit 2, and every byte that was there before still there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from inprocess import kit_in_process as kit  # noqa: E402
from test_hostile_inputs import refused  # noqa: E402
from test_signals_and_races import mount_tmpfs, mounts  # noqa: E402,F401  (the fixture is used by name)
from test_stale_and_edited import sweep  # noqa: E402,F401

from kit.outputs import INVENTORY


@dataclass(frozen=True)
class Writer:
    """A command that writes a folder: its arguments before `-o OUT`, and whether replacing its own
    earlier output needs --force."""

    name: str
    args: tuple[str, ...]
    force_to_replace: bool

    def run(self, root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
        """The command on the sweep at `root`, writing `out`."""
        if AGAINST in self.args and not (root / AGAINST).exists():   # a second copy of the pair, as a rerun's
            (root / AGAINST).parent.mkdir(parents=True, exist_ok=True)
            for suffix in (".json", ".mllog"):
                shutil.copy2((root / RESULT).with_suffix(suffix), (root / AGAINST).with_suffix(suffix))
        return kit(*self.args, "-o", str(out), *extra, cwd=root)


RESULT = "results/en/org__model-a.json"
AGAINST = "rerun/en/org__model-a.json"   # (--against the result itself is refused)
WRITERS = [
    Writer("collect", ("collect", "--from", "a=results", "--languages", "de,en"), True),
    Writer("release", ("release", "results"), True),
    Writer("report", ("report", "results"), False),
    Writer("export", ("export", "lrb", "results"), False),
    Writer("reproduce", ("reproduce", RESULT, "--against", AGAINST), False),
]
BY_NAME = {w.name: w for w in WRITERS}


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder` (links as their targets, files as their bytes)."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): (f"-> {os.readlink(p)}" if p.is_symlink() else
                                               p.read_bytes() if p.is_file() else "dir")
            for p in sorted(folder.rglob("*"))}


def no_staging_left(parent: Path) -> bool:
    return not [p for p in parent.iterdir() if p.name.endswith(".kit-staging")]


def force(writer: Writer) -> tuple[str, ...]:
    return ("--force",) if writer.force_to_replace else ()


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_folder_of_the_user_s_own_files_is_never_replaced(sweep, writer):
    out = sweep / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    refused(writer.run(sweep, out, *force(writer)), str(out))
    assert snapshot(out) == before and no_staging_left(sweep)


@pytest.mark.parametrize("marker", [INVENTORY, ".kit-release.json"])
@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_forged_empty_inventory_does_not_make_a_folder_kit_s(sweep, writer, marker):
    out = sweep / "out"
    out.mkdir()
    (out / marker).write_text("{}")
    (out / "thesis.tex").write_text("mine")
    before = snapshot(out)
    refused(writer.run(sweep, out, *force(writer)), str(out), "kit did not write")
    assert snapshot(out) == before


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_file_added_to_an_earlier_output_stops_the_replacement(sweep, writer):
    out = sweep / "out"
    assert writer.run(sweep, out).returncode == 0
    (out / "reviewer-notes.md").write_text("added by hand")
    before = snapshot(out)
    refused(writer.run(sweep, out, *force(writer)), "reviewer-notes.md", "not written by kit")
    assert snapshot(out) == before


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_file_changed_in_an_earlier_output_stops_the_replacement(sweep, writer):
    out = sweep / "out"
    assert writer.run(sweep, out).returncode == 0
    inventory = json.loads((out / INVENTORY).read_text())
    assert inventory["kit_output"] == writer.name
    changed = out / sorted(inventory["files"])[0]
    changed.write_bytes(changed.read_bytes() + b"edited")
    before = snapshot(out)
    refused(writer.run(sweep, out, *force(writer)), "changed since kit wrote it")
    assert snapshot(out) == before


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_an_earlier_output_of_the_same_command_is_replaced_and_others_are_not(sweep, writer):
    out = sweep / "out"
    assert writer.run(sweep, out).returncode == 0
    r = writer.run(sweep, out, *force(writer))
    assert r.returncode == 0, r.stderr
    other = BY_NAME["report" if writer.name != "report" else "export"]
    refused(other.run(sweep, out, *force(other)), f"holds the output of kit {writer.name}")


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_link_inside_an_earlier_output_is_refused_and_never_written_through(sweep, writer, tmp_path_factory):
    out = sweep / "out"
    assert writer.run(sweep, out).returncode == 0
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "keep.txt").write_text("outside")
    (out / "fr").symlink_to(elsewhere, target_is_directory=True)   # a language folder that is a link
    refused(writer.run(sweep, out, *force(writer)), "fr (a link)")
    assert snapshot(elsewhere) == {"keep.txt": b"outside"}


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
@pytest.mark.parametrize("target", ["file", "/dev/null", "link"])
def test_an_output_that_is_not_a_folder_is_one_error_line(sweep, writer, target):
    if target == "file":
        out = sweep / "out"
        out.write_text("a file")
    elif target == "link":
        (sweep / "real").mkdir()
        out = sweep / "out"
        out.symlink_to(sweep / "real", target_is_directory=True)
    else:
        out = Path(target)
    refused(writer.run(sweep, out, *force(writer)), str(out))
    if target == "file":
        assert out.read_text() == "a file"
    if target == "link":
        assert list((sweep / "real").iterdir()) == []


def fill(disk: Path) -> None:
    """Write to `disk` until it is full."""
    with open(disk / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (64 << 10))
                fh.flush()
        except OSError:
            pass


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_full_disk_leaves_the_earlier_output_whole(sweep, writer, mounts):
    disk = sweep / "disk"
    mount_tmpfs(disk, "size=8m")
    mounts.append(disk)
    out = disk / "out"
    assert writer.run(sweep, out).returncode == 0
    before = snapshot(out)
    fill(disk)
    refused(writer.run(sweep, out, *force(writer)), str(out), "No space left", "left as it was")
    assert snapshot(out) == before and no_staging_left(disk)


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.name)
def test_a_read_only_disk_is_one_error_line_and_nothing_written(sweep, writer, mounts):
    disk = sweep / "ro"
    mount_tmpfs(disk, "ro,size=1m")
    mounts.append(disk)
    refused(writer.run(sweep, disk / "out"), str(disk / "out"), "Read-only")
    assert list(disk.iterdir()) == []


@pytest.mark.slow   # reports written: 2 s
def test_files_named_as_a_report_s_without_an_inventory_are_the_user_s_and_never_replaced(sweep):
    """File names are no marker: a folder of the user's own summary.md, leaderboard.csv and pages is refused
    whole, even one that an earlier kit's report was (its inventory gone)."""
    out = sweep / "mine"
    (out / "pages").mkdir(parents=True)
    (out / "summary.md").write_text("my notes")
    (out / "leaderboard.csv").write_text("a,b\n")
    (out / "pages" / "ch1.html").write_text("<p>x</p>")
    before = snapshot(out)
    refused(BY_NAME["report"].run(sweep, out), "kit did not write")
    assert snapshot(out) == before
    earlier = sweep / "earlier"
    assert BY_NAME["report"].run(sweep, earlier).returncode == 0
    (earlier / INVENTORY).unlink()
    before = snapshot(earlier)
    refused(BY_NAME["report"].run(sweep, earlier), "kit did not write")
    assert snapshot(earlier) == before


def test_verdicts_an_earlier_kit_wrote_without_an_inventory_are_kept_and_added_to(sweep):
    out = sweep / "verdicts"
    out.mkdir()
    (out / "reproduce-org__old-en.md").write_text("an earlier verdict")
    assert BY_NAME["reproduce"].run(sweep, out).returncode == 0
    assert (out / "reproduce-org__old-en.md").read_text() == "an earlier verdict"
    assert (out / "reproduce-org__model-a-en.json").is_file() and (out / INVENTORY).is_file()


@pytest.mark.parametrize("name", ["roster.toml", "sites.toml"])
def test_demo_never_overwrites_a_users_own_roster_or_sites_file(tmp_path, monkeypatch, name):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / name).write_text("# my own sweep\nbenchmark = \"/data/lrb\"\n")
    before = (tmp_path / name).read_bytes()
    refused(kit("demo", "--workdir", str(tmp_path), cwd=tmp_path), name, "not written by kit demo", "--workdir")
    assert (tmp_path / name).read_bytes() == before
    assert not (tmp_path / "cache").exists(), "the demo built its assets before refusing"


def test_a_docker_save_that_fails_midway_leaves_the_earlier_archive_and_no_part(tmp_path, monkeypatch):
    from kit.images import engine

    def broken_stream(ref, chunk_size):
        yield b"first block"
        raise OSError(28, "No space left on device")

    api = type("Api", (), {"get_image": staticmethod(broken_stream)})()
    monkeypatch.setattr(engine, "client", lambda: type("Client", (), {"api": api})())
    dest = tmp_path / "images" / "kit-gguf.tar"
    dest.parent.mkdir()
    dest.write_bytes(b"the earlier archive")
    with pytest.raises(OSError):
        engine.save("sha256:" + "1" * 64, dest)
    assert dest.read_bytes() == b"the earlier archive"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["kit-gguf.tar"], "a partial archive was left"


def test_a_folder_made_at_the_destination_while_the_output_is_written_is_never_replaced(tmp_path):
    """The destination is judged again when the output is done: a folder the user made there meanwhile
    (kit ran for minutes) is refused and kept, and so is one swapped in between that check and the rename."""
    from kit.errors import ConfigError
    from kit.files import folder_identity, replace_folder
    from kit.outputs import write_output

    dest = tmp_path / "report"
    with pytest.raises(ConfigError, match="kit did not write"):
        with write_output(dest, "report", force_needed=False) as out:
            (out.stage / "summary.md").write_text("kit's")
            dest.mkdir()
            (dest / "mine.txt").write_text("precious")
    assert snapshot(dest) == {"mine.txt": b"precious"} and no_staging_left(tmp_path)

    judged = tmp_path / "judged"
    judged.mkdir()
    checked = folder_identity(judged)
    os.rename(judged, tmp_path / "elsewhere")
    judged.mkdir()
    (judged / "mine.txt").write_text("precious")
    staged = tmp_path / "staged"
    staged.mkdir()
    with pytest.raises(ConfigError, match="changed while kit was writing it"):
        replace_folder(staged, judged, checked=checked)
    assert snapshot(judged) == {"mine.txt": b"precious"} and staged.is_dir()


@pytest.mark.parametrize(("where", "said"), [("input", "cannot be read (Permission denied), so the report"),
                                             ("stage", "could not write the report (Permission denied")])
def test_a_file_that_cannot_be_read_is_blamed_on_the_input_not_on_the_output_s_disk(tmp_path, where, said):
    import errno

    from kit.errors import ConfigError
    from kit.outputs import write_output

    source = tmp_path / "results" / "en" / "org__m.mllog"
    with pytest.raises(ConfigError) as err:
        with write_output(tmp_path / "report", "report", force_needed=False) as out:
            named = source if where == "input" else out.stage / "summary.md"
            raise PermissionError(errno.EACCES, "Permission denied", str(named))
    assert said in err.value.one_line() and (str(source) in err.value.one_line()) == (where == "input")
    assert "free space" not in err.value.one_line() or where == "stage"
