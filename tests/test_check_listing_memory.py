"""`check --json` remembers how it listed a fleet's folders: a re-run reads again only the folders
that changed, and lists exactly what a run without the cache lists."""

from __future__ import annotations

import io
import os
import shutil
import time

import orjson
import pytest

from smoldata_tui.commands.check import run_check
from smoldata_tui.fleet import listing
from smoldata_tui.fleet.build import write_fleet

from .conftest import SAMPLES


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


class _Out(io.StringIO):
    def __init__(self):
        super().__init__()
        self.buffer = io.BytesIO()


def check(folder, use_cache=True):
    out = _Out()
    run_check([str(folder)], as_json=True, strict=False, out=out, use_cache=use_cache)
    return out.buffer.getvalue()


def paths(output):
    return [orjson.loads(line)["path"] for line in output.splitlines()]


def age(folder, seconds=3600):
    past = time.time_ns() - seconds * 10**9
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, ns=(past, past), follow_symlinks=False)


@pytest.fixture
def settled_at_once(monkeypatch):
    """Folders count as settled as soon as they are listed (a test's were all made just now)."""
    monkeypatch.setattr(listing, "SETTLE_S", 0)


@pytest.fixture
def folders_read(tmp_path, monkeypatch):
    """The folders of tmp_path/fleet that os.scandir is asked to read."""
    read = []
    real = os.scandir
    fleet = str(tmp_path / "fleet")

    def counting(path="."):
        if os.fspath(path).startswith(fleet):
            read.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(listing.os, "scandir", counting)
    return read


def test_a_rerun_reads_only_the_folders_that_changed(tmp_path, folders_read, settled_at_once):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 30, seed=7, max_steps=3, output_bytes=100)
    age(folder)
    folders_read.clear()
    first = check(folder)
    assert len(folders_read) == 31  # the fleet and its 30 episodes
    folders_read.clear()
    assert check(folder) == first
    assert folders_read == []  # every folder unchanged: asked one stat each, not read
    # A trace added to one episode and one removed from another: only those folders are read.
    shutil.copy(SAMPLES / "clean_pass.jsonl", traces[3].parent / "second.jsonl")
    traces[5].unlink()
    again = check(folder)
    assert sorted(folders_read) == sorted([str(traces[3].parent), str(traces[5].parent)])
    assert again == check(folder, use_cache=False)
    assert str(traces[3].parent / "second.jsonl") in paths(again)
    assert str(traces[5]) not in paths(again)


def test_a_folder_changed_just_before_it_was_listed_is_read_again(tmp_path, folders_read):
    # A name added in the same clock tick as the listing would leave the folder's ctime as it
    # was: a folder changed within the last 2 s is not remembered, so the next run reads it.
    folder = tmp_path / "fleet"
    write_fleet(folder, 3, seed=8, max_steps=3, output_bytes=100)
    check(folder)
    folders_read.clear()
    check(folder)
    assert len(folders_read) == 4  # the fleet and its 3 episodes, all made just now


def test_setting_a_folders_mtime_back_does_not_hide_a_new_trace(tmp_path, folders_read, settled_at_once):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 3, seed=11, max_steps=3, output_bytes=100)
    age(folder)
    check(folder)
    episode = traces[1].parent
    info = episode.stat()
    shutil.copy(SAMPLES / "clean_pass.jsonl", episode / "late.jsonl")
    os.utime(episode, ns=(info.st_atime_ns, info.st_mtime_ns))  # as an archive tool restores it
    folders_read.clear()
    assert str(episode / "late.jsonl") in paths(check(folder))
    assert folders_read == [str(episode)]


def test_a_folder_that_holds_a_link_is_always_read(tmp_path, settled_at_once):
    # Where a link leads can change without its folder changing: here its target becomes a
    # folder, which the listing never follows.
    folder = tmp_path / "fleet"
    write_fleet(folder, 2, seed=9, max_steps=3, output_bytes=100)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(SAMPLES / "clean_pass.jsonl", elsewhere / "x.jsonl")
    (folder / "linked.jsonl").symlink_to(elsewhere / "x.jsonl")
    age(folder)
    assert str(folder / "linked.jsonl") in paths(check(folder))
    assert str(folder / "linked.jsonl") in paths(check(folder))  # again, with the folders known
    (elsewhere / "x.jsonl").unlink()
    (elsewhere / "x.jsonl").mkdir()
    again = check(folder)
    assert str(folder / "linked.jsonl") not in paths(again)
    assert again == check(folder, use_cache=False)


def test_a_damaged_listing_file_is_ignored(tmp_path, cache_home, settled_at_once):
    folder = tmp_path / "fleet"
    write_fleet(folder, 4, seed=10, max_steps=3, output_bytes=100)
    age(folder)
    expected = check(folder, use_cache=False)
    check(folder)
    (memory,) = (cache_home / "smoldata-tui" / "listing").glob("*.json")
    data = orjson.loads(memory.read_bytes())
    for last in data["folders"].values():
        last[3] = [7] if last[3] else last[3]  # a folder's sub-folders that are not names
        last[4] = [None] if last[4] else last[4]
    memory.write_bytes(orjson.dumps(data))
    assert check(folder) == expected
    memory.write_bytes(b"{not json")
    assert check(folder) == expected


def test_a_folder_whose_permissions_changed_is_read_again(tmp_path, folders_read, settled_at_once):
    # Permissions can change without a name changing (a folder made unreadable, which a run
    # without the cache cannot list): the folder is read again, not answered from memory. (The
    # tests run as root, who reads any folder: what counts here is that it is read.)
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 3, seed=12, max_steps=3, output_bytes=100)
    age(folder)
    check(folder)
    episode = traces[2].parent
    episode.chmod(0o700)
    folders_read.clear()
    check(folder)
    assert folders_read == [str(episode)]
