"""`check --json` keeps each trace's result between runs, and serves it only while it is true."""

from __future__ import annotations

import io
import os
import shutil
import time

import orjson
import pytest

from smoldata_tui.commands.check import run_check
from smoldata_tui.fleet.build import write_fleet

from .conftest import run_cli


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


class Out(io.StringIO):
    def __init__(self):
        super().__init__()
        self.buffer = io.BytesIO()


def check(*paths, summary=False, use_cache=True, cwd=None):
    out = Out()
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        status = run_check([str(p) for p in paths], as_json=True, strict=False, summary=summary, out=out, use_cache=use_cache)
    finally:
        os.chdir(before)
    return status, out.buffer.getvalue()


def age(paths, seconds=3600):
    past = time.time_ns() - seconds * 10**9
    for path in paths:
        os.utime(path, ns=(past, past))


def fleet(tmp_path, count=12, seed=31):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, count, seed=seed, defect_rate=0.4)
    age(p for p in folder.rglob("*"))
    return folder, traces


def cache_files(home):
    return sorted((home / "smoldata-tui" / "check").glob("*.json"))


def cache_header(path):
    """A cache file's first line: its version, folder and entries (the check lines follow it)."""
    return orjson.loads(path.read_bytes().split(b"\n", 1)[0])


def test_a_second_run_gives_the_same_bytes_from_the_cache_and_only_the_cache(tmp_path, cache_home):
    folder, traces = fleet(tmp_path)
    listing = sorted(folder.rglob("*"))
    uncached = check(folder, summary=True, use_cache=False)
    assert cache_files(cache_home) == []  # --no-cache keeps nothing
    first = check(folder, summary=True)
    assert first == uncached and len(cache_files(cache_home)) == 1
    assert sorted(folder.rglob("*")) == listing  # nothing written into the data folder
    assert check(folder, summary=True) == uncached
    # Served from the cache: a trace rewritten behind its key (same size, mtime put back) still
    # reads as it was; one whose mtime moved is read again.
    trace = traces[0]
    info = trace.stat()
    trace.write_bytes(b"x" * info.st_size)
    os.utime(trace, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert check(folder)[1].splitlines()[0] == uncached[1].splitlines()[0]
    age([trace], seconds=1800)
    line = orjson.loads(check(folder)[1].splitlines()[0])
    assert line["native_tool_calls"] is None and line["verdict_reason"].startswith("JSONDecodeError")


def test_the_path_is_written_as_listed_and_a_new_sidecar_is_noticed(tmp_path, cache_home):
    folder, traces = fleet(tmp_path, count=3, seed=32)
    absolute = check(folder)[1]
    relative = check("fleet", cwd=tmp_path)[1]
    assert [orjson.loads(line)["path"] for line in relative.splitlines()] == [
        os.path.relpath(t, tmp_path) for t in traces
    ]
    assert [{**orjson.loads(line), "path": 0} for line in relative.splitlines()] == [
        {**orjson.loads(line), "path": 0} for line in absolute.splitlines()
    ]
    # A requests file appears beside an episode: its findings change, the cache does not hide it.
    requests = traces[1].with_name("run.requests.jsonl")
    requests.write_text('{"tools": ["bash"], "max_tokens": 32000}\n')
    age([requests])
    kinds = [f["kind"] for f in orjson.loads(check(folder)[1].splitlines()[1])["findings"]]
    assert "output_cap_missing" in kinds


def test_files_written_just_now_and_unreadable_traces_are_not_kept(tmp_path, cache_home):
    folder = tmp_path / "fresh"
    traces = write_fleet(folder, 2, seed=33, defect_rate=0)
    check(folder)
    assert cache_files(cache_home) == []  # every file changed within the last seconds
    # The same tick, the same size, other bytes: read again, so the answer is the new one.
    info = traces[0].stat()
    traces[0].write_bytes(b"y" * info.st_size)
    os.utime(traces[0], ns=(info.st_atime_ns, info.st_mtime_ns))
    assert orjson.loads(check(folder)[1].splitlines()[0])["native_tool_calls"] is None
    # A trace that disappears is never kept, and its old entry goes with it.
    age(p for p in folder.rglob("*"))
    check(folder)
    (cache_file,) = cache_files(cache_home)
    assert len(cache_header(cache_file)["entries"]) == 2
    shutil.rmtree(traces[1].parent)
    check(folder)
    assert list(cache_header(cache_file)["entries"]) == [os.path.relpath(traces[0], folder)]


def test_the_cli_takes_no_cache(tmp_path, cache_home):
    folder, _ = fleet(tmp_path, count=2, seed=34)
    plain = run_cli("check", "--json", "--no-cache", str(folder))
    assert not cache_home.exists()
    cached = run_cli("check", "--json", str(folder))
    assert len(cache_files(cache_home)) == 1
    again = run_cli("check", "--json", str(folder))
    assert plain.stdout == cached.stdout == again.stdout and plain.returncode == cached.returncode == again.returncode


def test_the_cache_keeps_the_folders_used_last(tmp_path, cache_home, monkeypatch):
    from smoldata_tui.fleet import cache

    monkeypatch.setattr(cache, "MAX_CACHE_FILES", 3)
    folders = []
    for number in range(5):
        folder = tmp_path / f"fleet{number}"
        write_fleet(folder, 1, seed=40 + number)
        age(p for p in folder.rglob("*"))
        folders.append(folder)
        check(folder)
    assert len(cache_files(cache_home)) == 3
    kept = {cache_header(path)["folder"] for path in cache_files(cache_home)}
    assert kept == {str(folder) for folder in folders[2:]}


def test_a_cut_cache_file_serves_only_the_lines_it_still_holds(tmp_path, cache_home):
    # The check lines follow the cache file's first line back to back; a file cut short (a full
    # disk, another writer's crash) must never hand out a piece of a line as a result.
    folder, traces = fleet(tmp_path)
    expected = check(folder, use_cache=False)[1].splitlines()
    check(folder)
    [cache_file] = cache_files(cache_home)
    data = cache_file.read_bytes()
    cache_file.write_bytes(data[: len(data) - len(data.split(b"\n", 1)[1]) // 2])  # half the lines
    for trace in traces:  # behind their keys: a result from the cache still reads as before
        info = trace.stat()
        trace.write_bytes(b"x" * info.st_size)
        os.utime(trace, ns=(info.st_atime_ns, info.st_mtime_ns))
    lines = check(folder)[1].splitlines()
    assert len(lines) == len(traces)
    from_cache = [line == before for line, before in zip(lines, expected)]
    for line, cached in zip(lines, from_cache):
        if not cached:  # analysed again: the rewritten file
            assert orjson.loads(line)["verdict_reason"].startswith("JSONDecodeError")
    assert 0 < sum(from_cache) < len(traces)
