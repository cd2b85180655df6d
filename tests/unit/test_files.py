"""kit.files: atomic writes leave the old file or the new one, and the file gets the mode a plain
open() would give it (a results tree is read by a team, not only by whoever wrote it)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from kit.errors import ConfigError
from kit.files import file_sha256, read_regular_file, replace_folder, write_bytes_atomic, write_text_atomic


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_a_new_file_gets_the_umask_mode_not_mkstemps_0600(tmp_path, umask_027):
    path = tmp_path / "results" / "en" / "run.json"
    write_text_atomic(path, "{}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "{}\n"
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_027):
    path = tmp_path / "summary.md"
    path.write_text("old")
    path.chmod(0o664)
    write_bytes_atomic(path, b"new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o664 and path.read_bytes() == b"new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_bytes_atomic(path, object())    # not bytes: fails inside the write
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert file_sha256(path) == hashlib.sha256(b"old").hexdigest()


def test_a_staged_folder_replaces_the_old_one_and_leaves_nothing_aside(tmp_path):
    dest, staged = tmp_path / "release", tmp_path / ".release.tmp"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    staged.mkdir()
    (staged / "new.txt").write_text("new")
    replace_folder(staged, dest)
    assert [p.name for p in dest.iterdir()] == ["new.txt"] and sorted(p.name for p in tmp_path.iterdir()) == ["release"]
    fresh = tmp_path / ".fresh"
    fresh.mkdir()
    replace_folder(fresh, tmp_path / "first")      # nothing there before
    assert (tmp_path / "first").is_dir() and not fresh.exists()


def test_the_swap_is_one_step_where_the_system_has_one_and_the_old_folder_comes_back_where_it_has_not(
        tmp_path, monkeypatch):
    """With renameat2's exchange the destination is never missing; without it (another system, a file system
    that cannot), a new folder that cannot be renamed in puts the old one back, and the error is raised."""
    import errno

    from kit import files

    dest, staged = tmp_path / "out", tmp_path / "staged"
    (dest / "a").mkdir(parents=True)
    staged.mkdir()
    (staged / "b").write_text("new", encoding="utf-8")
    assert files.exchange_paths(staged, dest) and (dest / "b").is_file() and (staged / "a").is_dir()
    assert files.exchange_paths(staged, dest) and (dest / "a").is_dir()   # and back
    monkeypatch.setattr(files, "exchange_paths", lambda a, b: False)
    real_rename = files.os.rename

    def failing(src, dst):
        if Path(src) == staged:
            raise OSError(errno.EIO, "Input/output error", str(src))
        return real_rename(src, dst)

    monkeypatch.setattr(files.os, "rename", failing)
    with pytest.raises(OSError, match="Input/output error"):
        replace_folder(staged, dest)
    assert (dest / "a").is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["out", "staged"]


def test_the_folders_a_killed_writer_left_are_swept_by_the_next_write_and_a_set_aside_output_put_back(tmp_path):
    from kit import files

    dest = tmp_path / "report"
    dest.mkdir()
    dead = _dead_pid()
    host = files.leftover_prefix(dest).split(".")[2].rsplit("-", 1)[0]
    stale = tmp_path / f".report.{host}-{dead}.abcd1234.kit-staging"
    alive = tmp_path / f".report.{host}-{os.getpid()}.efgh5678.kit-staging"   # a running writer's: kept
    other = tmp_path / f".report.otherhost-{dead}.ijkl9012.kit-staging"       # another host's: unknown, kept
    for folder in (stale, alive, other):
        folder.mkdir()
    files.sweep_leftovers(dest)
    assert not stale.exists() and alive.exists() and other.exists()
    dest.rmdir()   # the writer died between setting the old output aside and renaming the new one in
    aside = tmp_path / f".report.{host}-{dead}.0000.kit-old"
    (aside / "index.html").parent.mkdir()
    (aside / "index.html").write_text("the last report", encoding="utf-8")
    files.sweep_leftovers(dest)
    assert (dest / "index.html").read_text(encoding="utf-8") == "the last report" and not aside.exists()


def _dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_write_that_is_not_durable_syncs_nothing_and_make_durable_syncs_every_file_and_folder(tmp_path, monkeypatch):
    import kit.files as files

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    paths = [tmp_path / "a" / "one.html", tmp_path / "a" / "two.html", tmp_path / "b" / "three.png"]
    for path in paths:
        write_bytes_atomic(path, b"page", durable=False)
    assert synced == [] and [p.read_bytes() for p in paths] == [b"page"] * 3
    seen: list[Path] = []
    monkeypatch.setattr(files, "_fsync_path", lambda p: seen.append(p))
    files.make_durable(paths + [paths[0]])
    assert sorted(seen) == sorted(map(str, [*paths, tmp_path / "a", tmp_path / "b"]))   # each once
    write_bytes_atomic(tmp_path / "durable.txt", b"x")
    assert len(synced) == 1   # the file; its folder through _fsync_path


def test_a_staged_folder_is_made_durable_before_it_is_renamed_into_place(tmp_path, monkeypatch):
    import kit.files as files

    staged, dest = tmp_path / ".stage", tmp_path / "out"
    (staged / "de").mkdir(parents=True)
    (staged / "de" / "run.json").write_text("{}")
    (staged / "card.md").write_text("card")
    events: list[tuple[str, Path]] = []
    monkeypatch.setattr(files, "make_durable", lambda paths: events.append(("durable", sorted(map(Path, paths)))))
    real_rename = os.rename
    monkeypatch.setattr(files.os, "rename", lambda a, b: events.append(("rename", Path(b))) or real_rename(a, b))
    replace_folder(staged, dest)
    assert events == [("durable", sorted([staged / "card.md", staged / "de" / "run.json"])), ("rename", dest)]


def test_read_regular_file_returns_a_small_files_bytes(tmp_path):
    path = tmp_path / "plan.json"
    path.write_bytes(b'{"pairs": []}')
    assert read_regular_file(path, "a plan file", 1 << 20) == b'{"pairs": []}'


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 300_001])
def test_read_regular_file_without_a_limit_reads_to_the_end_even_past_its_size_at_open(tmp_path, monkeypatch, size):
    """No limit: every byte, for any size; a file that grew after its size was taken (fstat said less) is
    still read to its end."""
    path = tmp_path / "run.json"
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    path.write_bytes(data)
    assert read_regular_file(path, "a checkpoint", None) == data
    real_fstat = os.fstat

    def smaller(fd):
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], max(0, info.st_size - 70_000), *info[7:10]))

    monkeypatch.setattr("kit.files.os.fstat", smaller)
    assert read_regular_file(path, "a checkpoint", None) == data


@pytest.mark.parametrize("target", ["/dev/zero", "folder", "fifo"])
def test_read_regular_file_refuses_what_is_not_a_regular_file(tmp_path, target):
    path = tmp_path / "x.json"
    if target == "folder":
        path.mkdir()
    elif target == "fifo":
        os.mkfifo(path)   # opening it must not wait for a writer
    else:
        path.symlink_to(target)
    with pytest.raises(ConfigError, match=r"x\.json: a plan file is not a regular file") as err:
        read_regular_file(path, "a plan file", 1 << 20)
    assert err.value.fix


def test_read_regular_file_refuses_a_file_over_the_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 1025)
    with pytest.raises(ConfigError, match=r"big\.json: a checkpoint is over 1024 bytes"):
        read_regular_file(path, "a checkpoint", 1024)
    path.write_bytes(b"x" * 1024)
    assert len(read_regular_file(path, "a checkpoint", 1024)) == 1024


@pytest.mark.parametrize("value", ["..", ".", ".hidden", "a/b", "a\\b", "a\x00b", "fr\n", "", None, "x/" * 101,
                                   "../../etc"])
def test_data_never_becomes_a_name_that_leaves_its_folder(value):
    from kit.errors import ConfigError
    from kit.files import name_part

    with pytest.raises(ConfigError, match="unsafe language"):
        name_part(value, "language")


def test_a_name_too_long_for_a_file_says_so_with_its_length():
    from kit.files import name_part

    with pytest.raises(ConfigError, match="run name 'xxx.*is 243 bytes long, more than the 200"):
        name_part("x" * 243, "run name")


def test_plain_names_pass_unchanged():
    from kit.files import name_part

    for value in ("fr", "zh-Hant", "org__name@v+Variant", "é" * 100, "a.b"):
        assert name_part(value, "run name") == value


def test_a_reproduce_verdict_named_by_a_hostile_language_is_refused_and_nothing_is_written(tmp_path):
    from kit.errors import ConfigError
    from kit.repro.verdict_report import write_verdict

    out = tmp_path / "out"
    with pytest.raises(ConfigError, match="unsafe result name"):
        write_verdict(out, "org__m-../../../../tmp/x", {})
    assert not out.exists() and not list(tmp_path.rglob("reproduce-*"))


def test_regular_files_lists_every_regular_file_sorted_and_neither_lists_nor_follows_links(tmp_path):
    from kit.files import folders_under, regular_files

    for rel in ("b.txt", "a/one.html", "a/deep/two.png", "a.b/x"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "secret").write_text("x")
    (tmp_path / "linked-dir").symlink_to(outside)
    (tmp_path / "linked-file").symlink_to(tmp_path / "b.txt")
    os.mkfifo(tmp_path / "fifo")
    assert regular_files(tmp_path) == ["a.b/x", "a/deep/two.png", "a/one.html", "b.txt"]
    assert folders_under(tmp_path) == ["a", "a.b", "a/deep"]
    assert regular_files(str(tmp_path / "a")) == ["deep/two.png", "one.html"]


def test_write_bytes_new_writes_pieces_in_order_and_replaces_a_file_already_there_whole(tmp_path):
    from kit.files import write_bytes_new

    page = tmp_path / "pages" / "index.html"
    write_bytes_new(page, (piece for piece in (b"<p>", b"one", b"</p>")))
    assert page.read_bytes() == b"<p>one</p>"
    write_bytes_new(page, iter([b"two", b"", b"three"]))   # there already: replaced atomically
    assert page.read_bytes() == b"twothree"
    write_bytes_new(tmp_path / "plain", b"bytes")
    assert (tmp_path / "plain").read_bytes() == b"bytes"


def test_write_bytes_new_links_the_file_it_replaces_only_when_it_holds_the_same_bytes(tmp_path):
    """same_as: the earlier output's file is linked in when its bytes are the page's, and only then (another
    size, other bytes of the same size, no file, a link in its place: the page is written)."""
    from kit.files import write_bytes_new

    earlier, stage = tmp_path / "earlier", tmp_path / "stage"
    earlier.mkdir()
    same, other, longer = earlier / "same.html", earlier / "other.html", earlier / "longer.html"
    same.write_bytes(b"<p>one</p>")
    other.write_bytes(b"<p>two</p>")
    longer.write_bytes(b"<p>one</p>\n")
    (earlier / "link.html").symlink_to(same)
    for name in ("same.html", "other.html", "longer.html", "absent.html", "link.html"):
        write_bytes_new(stage / "pages" / name, b"<p>one</p>", same_as=earlier / name)   # the folder is made too
        assert (stage / "pages" / name).read_bytes() == b"<p>one</p>"
        assert not (stage / "pages" / name).is_symlink()
    assert os.stat(stage / "pages" / "same.html").st_ino == os.stat(same).st_ino
    for name in ("other.html", "longer.html", "absent.html", "link.html"):
        assert os.stat(stage / "pages" / name).st_nlink == 1, name
    assert other.read_bytes() == b"<p>two</p>"   # nothing written through
    write_bytes_new(tmp_path / "pieces.html", iter([b"<p>one", b"</p>"]), same_as=same)   # pieces: written
    assert os.stat(tmp_path / "pieces.html").st_ino != os.stat(same).st_ino


def test_copy_new_links_the_earlier_file_only_when_it_holds_the_source_s_bytes(tmp_path):
    """copy_new: the earlier output's file is linked in when its bytes are the source's; else the source is
    copied with its times (another size, other bytes of the same size, no file, a link in its place)."""
    from kit.files import copy_new

    source, earlier, stage = tmp_path / "source.json", tmp_path / "earlier", tmp_path / "stage"
    source.write_bytes(b'{"a": 1}')
    os.utime(source, (1_000_000, 1_000_000))
    earlier.mkdir()
    (earlier / "same.json").write_bytes(b'{"a": 1}')
    (earlier / "other.json").write_bytes(b'{"a": 2}')
    (earlier / "longer.json").write_bytes(b'{"a": 10}')
    (earlier / "link.json").symlink_to(earlier / "same.json")
    for name in ("same.json", "other.json", "longer.json", "absent.json", "link.json"):
        copy_new(source, stage / "en" / name, same_as=earlier / name)   # the folder is made too
        assert (stage / "en" / name).read_bytes() == b'{"a": 1}' and not (stage / "en" / name).is_symlink()
    assert os.stat(stage / "en" / "same.json").st_ino == os.stat(earlier / "same.json").st_ino
    for name in ("other.json", "longer.json", "absent.json", "link.json"):
        assert os.stat(stage / "en" / name).st_nlink == 1, name
        assert os.stat(stage / "en" / name).st_mtime == 1_000_000, name   # copied with its times
    assert (earlier / "other.json").read_bytes() == b'{"a": 2}'   # nothing written through
    copy_new(source, stage / "plain.json")
    assert os.stat(stage / "plain.json").st_ino != os.stat(source).st_ino


def test_write_bytes_new_writes_the_page_where_no_link_can_be_made(tmp_path, monkeypatch):
    """A platform without linkat (NotImplementedError) or a filesystem without links (OSError): written."""
    from kit.files import write_bytes_new

    earlier = tmp_path / "earlier.html"
    earlier.write_bytes(b"<p>one</p>")
    for error in (NotImplementedError("link: follow_symlinks unavailable"), PermissionError(1, "no links here")):
        def refuse(*args, error=error, **kwargs):
            raise error

        monkeypatch.setattr("kit.files.os.link", refuse)
        page = tmp_path / "stage" / f"{type(error).__name__}.html"
        write_bytes_new(page, b"<p>one</p>", same_as=earlier)
        assert page.read_bytes() == b"<p>one</p>" and os.stat(page).st_ino != os.stat(earlier).st_ino


@pytest.mark.parametrize("folder", [Path("results/de"), Path("/abs/results/fr"), Path("."), Path("results"), Path("/")])
def test_child_path_is_the_path_the_slash_makes(folder):
    """kit.files.child_path (a checked name under a folder, without parsing the name again) gives the very
    Path `folder / name` gives: the same text, parts, parent, name, hash and equality."""
    from kit.files import child_path

    made, slash = child_path(folder, "org__model-1.json"), folder / "org__model-1.json"
    assert (str(made), made.parts, made.parent, made.name, hash(made)) == \
           (str(slash), slash.parts, slash.parent, slash.name, hash(slash))
    assert made == slash and type(made) is type(slash)


def test_a_library_s_own_words_for_a_full_disk_are_the_disk_error_they_stand_for(tmp_path):
    """safetensors and tokenizers (Rust) raise their own exception types for a full disk; kit reads the
    OS error in their message, so the demo says "No space left on device" naming the folder, not a
    traceback; any other library error stays what it was."""
    import errno

    from kit.errors import disk_error, library_disk_error

    class SafetensorError(Exception):
        pass

    full = library_disk_error(SafetensorError("Error while serializing: I/O error: No space left on device "
                                              "(os error 28)"), tmp_path)
    assert isinstance(full, OSError) and full.errno == errno.ENOSPC and full.filename == str(tmp_path)
    assert disk_error(full).one_line().startswith(f"{tmp_path}: No space left on device")
    assert library_disk_error(SafetensorError("header too large"), tmp_path) is None
    assert library_disk_error(SafetensorError("(os error 4)"), tmp_path) is None   # EINTR: not the disk's


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write_there(tmp_path):
    """A writer killed between making its temporary file and renaming it (SIGKILL, the OOM killer) leaves
    it beside the file; the next atomic write into that folder removes it, and never a running writer's
    or a user's file."""
    from kit.files import _host, leftover_prefix, sweep_temporary_files, temporary_path

    folder = tmp_path / "fr"
    folder.mkdir()
    dead = folder / f".m.intoto.jsonl.{_host()}-{_dead_pid()}.x1y2.tmp"
    dead.write_text("part of an envelope")
    mine = temporary_path(folder / "m.json", "lines")
    mine.write_text("being written")
    users = folder / ".notes.tmp"
    users.write_text("a user's")
    assert leftover_prefix(folder / "m.json") in mine.name
    write_text_atomic(folder / "m.json", "{}\n")
    assert not dead.exists() and mine.exists() and users.exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([".notes.tmp", mine.name, "m.json"])
    sweep_temporary_files(folder)   # (this process is running: its own file stays)
    assert mine.exists()


def test_a_full_disk_while_writing_names_the_file(tmp_path):
    """An error of a write names no file (the disk filled while bytes went to an open file): the one
    being written is named, so that its line says which folder's disk is full."""
    import errno

    from kit.files import atomic_writer

    target = tmp_path / "out" / "envelope.jsonl"
    with pytest.raises(OSError) as err:
        with atomic_writer(target) as fh:
            fh.write(b"x")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(target)
    assert not target.exists() and list(target.parent.iterdir()) == []
