"""Find text in a trace: which events' lines contain the query.

Searches the bytes of the file, chunk by chunk (``pread``, so memory stays flat on a 150 MB
trace), for the query as typed and as JSON writes it inside a string (``say "hi"`` is stored
as ``say \\"hi\\"``). Case-insensitive unless the query has a capital letter ("smart case";
folding is ASCII-only). At most one hit per event is counted. Plain Python, no Textual.
"""

from __future__ import annotations

import json
import os
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

CHUNK = 4 << 20


@dataclass(frozen=True)
class Query:
    text: str
    needles: tuple[bytes, ...]  # what to look for in the (maybe lowered) bytes
    fold_case: bool

    @cached_property
    def highlight(self) -> re.Pattern[str]:
        """For highlighting the query in row text."""
        return re.compile(re.escape(self.text), re.IGNORECASE if self.fold_case else 0)


def make_query(text: str) -> Query | None:
    if not text:
        return None
    fold_case = text == text.lower()
    forms = {text, json.dumps(text, ensure_ascii=False)[1:-1]}
    needles = tuple(sorted({(form.lower() if fold_case else form).encode("utf-8") for form in forms}))
    return Query(text, needles, fold_case)


def search_events(
    fd: int,
    offsets: Sequence[int],
    lengths: Sequence[int],
    query: Query,
    *,
    cancelled: Callable[[], bool] = lambda: False,
    progress: Callable[[array, float], None] | None = None,
) -> array | None:
    """Sorted indices of the events (``offsets``/``lengths`` of their lines, in file order)
    whose line contains the query; None when cancelled."""
    found = array("i")
    if not offsets:
        return found
    start = offsets[0]
    end = offsets[-1] + lengths[-1]
    overlap = max(len(needle) for needle in query.needles) - 1
    position = start
    while position < end:
        if cancelled():
            return None
        data = os.pread(fd, min(CHUNK + overlap, end - position), position)
        if not data:
            break
        last_chunk = position + len(data) >= end
        limit = len(data) if last_chunk else min(CHUNK, len(data))
        if query.fold_case:
            data = data.lower()
        local = 0
        while local < limit:
            hit = min(
                (index for index in (data.find(needle, local) for needle in query.needles) if index != -1), default=-1
            )
            if hit == -1 or hit >= limit:
                break
            event = bisect_right(offsets, position + hit) - 1
            first = event
            while first > 0 and offsets[first - 1] == offsets[event]:
                first -= 1  # the pieces of one line share it, and the hit
            if not found or found[-1] < first:
                found.extend(range(first, event + 1))
            local = max(hit + 1, offsets[event] + lengths[event] + 1 - position)
        position += max(limit, local)
        if progress is not None:
            progress(found, min(1.0, (position - start) / max(1, end - start)))
    return found
