"""The episodes of a folder, summarised on every CPU, cached, and watched for new ones.

An episode is a trace (``*.jsonl``, not a sidecar) with, beside it, its ``run.meta.json`` and
``run.training.json`` when present. :meth:`FleetIndex.refresh` lists the folder, hands back
what the cache already knows at once, analyses the rest on every CPU and hands each batch back
as it finishes; called again, it only redoes the episodes whose files changed (a running batch
writing new episodes, a trace still growing, a status rewritten) and reports those that went
away. :func:`watch` calls it on a timer. Nothing is written into the data folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.fleet.cache import Key, SummaryCache, episode_key
from smoldata_tui.fleet.listing import walk_traces
from smoldata_tui.fleet.pool import as_finished
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.fleet.work import summarize_episode

FIRST_INLINE = 4  # episodes analysed in this process before the pool's results come in
FIRST_BATCH = 200  # cached rows handed over before the rest, so the table fills at once


@dataclass(slots=True)
class EpisodeFile:
    path: str
    key: Key  # what the cache entry must match


def scan(folder: Path) -> Iterator[EpisodeFile]:
    """Every episode under ``folder``, listed as ``check`` lists it (:mod:`.listing`), in sorted
    path order. A FIFO or a device is skipped (never opened); a trace that cannot be read, a
    broken link included, is kept: its row says why."""
    for trace in walk_traces(str(folder)):
        if trace.special is not None:
            continue
        key = episode_key(trace.path, trace.names)
        yield EpisodeFile(trace.path, key if key is not None else _UNREADABLE)


_UNREADABLE: Key = (-2, -2)  # the key of a trace that could not be examined: its row is an error, never cached


@dataclass
class RefreshResult:
    episodes: int  # how many the folder holds now
    analysed: int  # how many had to be read (not in the cache, or changed)
    removed: list[str]
    seconds: float


class FleetIndex:
    """What is known about the episodes of one folder; refresh() keeps it current."""

    def __init__(self, folder: str | os.PathLike[str], *, cache_dir: Path | None = None, workers: int | None = None,
                 use_cache: bool = True) -> None:  # fmt: skip
        self.folder = Path(os.path.abspath(folder))  # rows and cache entries hold absolute paths
        self.workers = workers
        self.cache = SummaryCache(self.folder, cache_dir) if use_cache else None
        self.summaries: dict[str, EpisodeSummary] = {}
        self._keys: dict[str, Key] = {}
        self._cache_loaded = False

    def refresh(
        self,
        on_batch: Callable[[list[EpisodeSummary]], None],
        *,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> RefreshResult:
        started = time.perf_counter()
        if self.cache is not None and not self._cache_loaded:
            self._show_cached(on_batch)
        seen: set[str] = set()
        todo: list[EpisodeFile] = []
        ready: list[EpisodeSummary] = []
        inline = FIRST_INLINE
        for episode in scan(self.folder):
            seen.add(episode.path)
            if self._keys.get(episode.path) == episode.key:
                continue  # unchanged since the last refresh
            cached = self.cache.get(episode.path, episode.key) if self.cache is not None else None
            if cached is None and inline:
                # The first few right here, while the listing goes on and the worker processes
                # start: the first rows come sooner.
                inline -= 1
                cached = summarize_episode(episode.path)
                self._take(episode, cached)
                on_batch([cached])
                continue
            if cached is None:
                todo.append(episode)
                continue
            shown = self.summaries.get(episode.path) is cached  # already on screen, from the cache
            self._take(episode, cached, from_cache=True)
            if not shown:
                ready.append(cached)
            if len(ready) >= FIRST_BATCH:
                on_batch(ready)
                ready = []
        if ready:
            on_batch(ready)
        keys = {episode.path: episode.key for episode in todo}
        rest = [episode.path for episode in todo]
        for batch in as_finished(summarize_episode, rest, workers=self.workers, cancelled=cancelled):
            for summary in batch:
                self._take(EpisodeFile(summary.path, keys[summary.path]), summary)
            on_batch(batch)
        removed = [path for path in self.summaries if path not in seen]
        for path in removed:
            del self.summaries[path]
            self._keys.pop(path, None)
        if self.cache is not None:
            self.cache.forget(set(removed))
            if not cancelled():
                self.cache.save()
        analysed = len(todo) + FIRST_INLINE - inline
        return RefreshResult(len(seen), analysed, removed, time.perf_counter() - started)

    def _show_cached(self, on_batch: Callable[[list[EpisodeSummary]], None]) -> None:
        """Hand over what the cache knows before listing the folder: a folder opened before shows
        at once. The listing then confirms each row, redoes changed ones and removes those gone."""
        self.cache.load()
        self._cache_loaded = True
        batch = []
        for path, (_key, summary, _line) in self.cache.entries.items():
            self.summaries[path] = summary  # not in _keys: the listing must still confirm it
            batch.append(summary)
            if len(batch) >= 2000:
                on_batch(batch)
                batch = []
        if batch:
            on_batch(batch)

    def _take(self, episode: EpisodeFile, summary: EpisodeSummary, *, from_cache: bool = False) -> None:
        self.summaries[episode.path] = summary
        self._keys[episode.path] = episode.key
        if self.cache is not None and not from_cache and summary.error is None:
            self.cache.put(episode.path, episode.key, summary)


def watch(
    index: FleetIndex,
    on_batch: Callable[[list[EpisodeSummary]], None],
    on_refreshed: Callable[[RefreshResult], None],
    *,
    stopped: Callable[[], bool],
    interval: float = 2.0,
) -> None:
    """Refresh until ``stopped()``: at once, then every ``interval`` seconds, or less often when
    listing the folder itself takes long (never more than a tenth of the time spent polling)."""
    while not stopped():
        result = index.refresh(on_batch, cancelled=stopped)
        on_refreshed(result)
        pause = max(interval, 10 * result.seconds if result.analysed == 0 else interval)
        deadline = time.monotonic() + pause
        while not stopped() and time.monotonic() < deadline:
            time.sleep(0.1)
