"""The fleet index: every episode of a folder summarised, cached outside it, kept current."""

from __future__ import annotations

import os
import shutil
import threading
import time

import orjson
import pytest

from smoldata_tui.fleet.aggregate import fleet_totals
from smoldata_tui.fleet.build import write_fleet
from smoldata_tui.fleet.cache import SummaryCache
from smoldata_tui.fleet.index import FleetIndex, watch
from smoldata_tui.fleet.work import summarize_episode
from smoldata_tui.store.metadata import metadata_path_for


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home


def age(folder, seconds=3600):
    """Make the folder's files an hour old: the cache keeps no entry of a file changed within the
    last seconds (one rewritten in the same clock tick, same size, would look unchanged)."""
    past = time.time_ns() - seconds * 10**9
    for path in folder.rglob("*"):
        os.utime(path, ns=(past, past))


def files_under(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def refresh(index):
    batches = []
    result = index.refresh(batches.append)
    return result, [summary for batch in batches for summary in batch]


def test_index_summarises_every_episode_and_reopens_from_the_cache(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 40, seed=11, defect_rate=0.3)
    (folder / "00003-x").mkdir()  # a folder without a trace, and a sidecar that is not one
    (folder / "00003-x" / "run.proxy.jsonl").write_text("{}\n")
    age(folder)
    before = files_under(folder)

    result, streamed = refresh(FleetIndex(folder, workers=2))
    assert result.episodes == 40 and result.analysed == 40 and result.removed == []
    assert sorted(s.path for s in streamed) == sorted(str(p) for p in traces)
    expected = {str(p): summarize_episode(str(p)) for p in traces}
    assert {s.path: s for s in streamed} == expected
    assert files_under(folder) == before  # nothing written into the data folder
    cache_files = list((cache_home / "smoldata-tui" / "fleet").iterdir())
    assert len(cache_files) == 1 and cache_files[0].suffix == ".json"

    again = FleetIndex(folder, workers=2)
    result, streamed = refresh(again)
    assert result.analysed == 0 and {s.path: s for s in streamed} == expected
    assert fleet_totals(again.summaries.values()).to_json() == fleet_totals(expected.values()).to_json()


def test_changed_new_and_removed_episodes_are_noticed(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 8, seed=12, defect_rate=0)
    index = FleetIndex(folder, workers=2)
    refresh(index)

    trace = traces[0]
    trace.write_bytes(trace.read_bytes() + b'{"type":"error","timestamp":1,"sessionID":"s","error":{}}\n')
    meta = metadata_path_for(traces[1])
    meta.write_bytes(meta.read_bytes().replace(b'"finished"', b'"killed"'))
    os.utime(meta, ns=(time.time_ns(), time.time_ns() + 10**9))  # a new mtime even on a coarse clock
    traces[2].unlink()
    write_fleet(tmp_path / "more", 1, seed=13)
    new = folder / "new-episode"
    (tmp_path / "more").rename(new)

    result, streamed = refresh(index)
    assert result.removed == [str(traces[2])]
    assert sorted(s.path for s in streamed) == sorted([str(trace), str(traces[1]), *map(str, new.rglob("run.jsonl"))])
    assert index.summaries[str(trace)].kinds.get("error_event") == 1
    assert index.summaries[str(traces[1])].status == "killed"
    assert len(index.summaries) == 8


def test_a_broken_meta_file_and_a_vanished_trace_are_rows_with_a_reason(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 3, seed=14, defect_rate=0, with_metadata=1.0)
    metadata_path_for(traces[0]).write_text("{ not json")
    _result, streamed = refresh(FleetIndex(folder, workers=1))
    broken = next(s for s in streamed if s.path == str(traces[0]))
    assert broken.accepted and broken.task is None
    assert broken.meta_error.startswith("run.meta.json: it is not valid JSON")
    gone = summarize_episode(str(folder / "vanished" / "run.jsonl"))
    assert gone.error == "the trace is gone (deleted or moved while it was being read)" and not gone.accepted


def test_a_cache_of_another_version_or_damaged_is_ignored(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    write_fleet(folder, 4, seed=15)
    age(folder)
    refresh(FleetIndex(folder, workers=1))
    cache = SummaryCache(folder)
    data = orjson.loads(cache.path.read_bytes())
    data["version"] = "0.0.0+old"
    cache.path.write_bytes(orjson.dumps(data))
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 4  # re-read, then saved anew
    cache.path.write_bytes(b"\x00garbage")
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 4
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 0


def test_watch_picks_up_episodes_a_running_batch_writes(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    write_fleet(folder, 2, seed=16)
    index = FleetIndex(folder, workers=2)  # from a second thread: the pool uses a forkserver
    stop = threading.Event()
    rounds = []
    thread = threading.Thread(
        target=watch, args=(index, lambda batch: None, rounds.append), kwargs={"stopped": stop.is_set, "interval": 0.1}
    )
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not rounds and time.monotonic() < deadline:
            time.sleep(0.05)
        write_fleet(tmp_path / "later", 1, seed=17)
        (tmp_path / "later").rename(folder / "later")
        while len(index.summaries) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(index.summaries) == 3
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_reopening_shows_the_cached_rows_first_then_confirms_them(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 6, seed=18, defect_rate=0)
    age(folder)
    refresh(FleetIndex(folder, workers=1))
    shutil.rmtree(traces[0].parent)  # gone while the table was closed
    traces[1].write_bytes(traces[1].read_bytes() + b"\n")  # changed (one more line) meanwhile
    batches = []
    result = FleetIndex(folder, workers=1).refresh(batches.append)
    assert len(batches[0]) == 6  # every cached row at once, before the folder is listed
    assert result.removed == [str(traces[0])] and result.analysed == 1
    redone = [s for batch in batches[1:] for s in batch]
    assert [s.path for s in redone] == [str(traces[1])]


def test_a_changed_sidecar_redoes_its_episode_and_a_file_changed_just_now_is_not_kept(tmp_path, cache_home):
    folder = tmp_path / "fleet"
    traces = write_fleet(folder, 3, seed=19, defect_rate=0)
    age(folder)
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 3
    # A requests file appears beside one episode (its findings may change): that episode is redone.
    requests = traces[0].with_name("run.requests.jsonl")
    requests.write_text('{"tools": ["bash"], "max_tokens": 32000}\n')
    reopened = FleetIndex(folder, workers=1)
    result, _ = refresh(reopened)
    assert result.analysed == 1 and reopened.summaries[str(traces[0])].kinds.get("output_cap_missing") == 1
    # Written a moment ago, it could be rewritten within the same clock tick at the same size and
    # look unchanged: its episode is not kept, so the next opening reads it again.
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 1
    past = time.time_ns() - 3600 * 10**9
    os.utime(requests, ns=(past, past))  # settled (its mtime moves, so the episode is read once more)
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 1
    assert refresh(FleetIndex(folder, workers=1))[0].analysed == 0
