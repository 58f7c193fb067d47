"""``check --json``'s results kept between runs: a trace unchanged since it was last checked is not
read again.

Each folder checked (a directory argument, or the folder of a file argument) has its own
:class:`~smoldata_tui.fleet.cache.SummaryCache` of kind ``check``: an entry holds the trace's
summary and its JSON line without the path (the path is written as listed this time), under the
trace's path within that folder, and is used while the trace's and its sidecars' sizes and mtimes
are those it was made from (:func:`~smoldata_tui.fleet.cache.episode_key`).
A trace that cannot be read is never kept: the next run asks again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from smoldata_tui.fleet.cache import Key, SummaryCache, episode_key

if TYPE_CHECKING:
    from smoldata_tui.fleet.checked import Checked, Listed


def _path_prefix(path: str) -> bytes:
    return b'{"path":' + orjson.dumps(path) + b","


def line_with_path(path: str, body: bytes) -> bytes:
    """The JSON line of a trace listed as ``path``, from its object without the path."""
    return _path_prefix(path) + body[1:] + b"\n"


def body_of(path: str, line: bytes) -> bytes:
    """The inverse of :func:`line_with_path`."""
    return b"{" + line[len(_path_prefix(path)) : -1]


class CheckCache:
    def __init__(self, listed: list[Listed], cache_dir: Path | None = None) -> None:
        self._caches: dict[str, SummaryCache] = {}
        self._walked = {item.root for item in listed if item.names is not None}  # whole folders: prunable
        for root in {item.root for item in listed}:
            cache = SummaryCache(Path(root), cache_dir, kind="check")
            cache.load()
            self._caches[root] = cache
        self._keys: dict[int, Key] = {}  # index in the listing -> its trace's key
        # A cache with no entries (a first run) is asked nothing: the workers take each trace's
        # key as they analyse it (check_keyed), and the parent does not stat every file first.
        self._empty = {root for root, cache in self._caches.items() if not cache.entries}
        self.keys_wanted = False  # set by lookup: the results are to come with their keys

    def lookup(self, listed: list[Listed]) -> dict[int, Checked]:
        """The results still true, by index in ``listed``; remembers every key for :meth:`keep`."""
        from smoldata_tui.fleet.checked import Checked

        hits: dict[int, Checked] = {}
        seen: dict[str, set[str]] = {root: set() for root in self._walked}
        for index, item in enumerate(listed):
            if item.root in self._empty:
                self.keys_wanted = True
                continue
            key = episode_key(item.path, item.names)
            if key is None:
                continue  # gone or not a regular file: analysed, to say so
            if item.root in seen:
                seen[item.root].add(item.relative)
            self._keys[index] = key
            cached = self._caches[item.root].get_line(item.relative, key)
            if cached is not None:
                summary, body = cached
                summary.path = item.path
                hits[index] = Checked(item.path, summary, line=line_with_path(item.path, body))
        for root, paths in seen.items():  # episodes no longer in a folder checked whole
            cache = self._caches[root]
            cache.forget(set(cache.entries) - paths)
        return hits

    def keep(self, index: int, item: Listed, result: Checked) -> None:
        key = self._keys.get(index, result.key)
        if key is None or result.error is not None or result.line is None:
            return
        self._caches[item.root].put(item.relative, key, result.summary, body_of(item.path, result.line))

    def save(self) -> None:
        for cache in self._caches.values():
            cache.save()
