"""Search on the episode screen: run the byte search on a worker, count, move between matches."""

from __future__ import annotations

import os
import time
from array import array
from bisect import bisect_left, bisect_right
from itertools import chain

from rich.text import Text
from textual.message import Message
from textual.worker import get_current_worker
from textual.screen import Screen

from smoldata_tui.ui.search import Query, make_query, search_events
from smoldata_tui.ui.widgets.find_bar import FindBar


PROGRESS_SECONDS = 0.1


class SearchProgress(Message):
    """Matches found so far by the search worker (posted to the episode screen)."""

    def __init__(self, generation: int, start: int, end: int, found: array, done: bool) -> None:
        super().__init__()
        self.generation = generation
        self.start = start  # the events searched: start <= event < end
        self.end = end
        self.found = found
        self.done = done


class SearchController:
    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.query: Query | None = None
        self.matches = array("i")
        self.searched = 0  # events below this index have been searched
        self.running = False
        self.generation = 0
        self._pending_step: int | None = None

    @property
    def active(self) -> bool:
        return self.query is not None

    # --- starting -----------------------------------------------------------------------------
    def start(self, text: str) -> None:
        self.generation += 1
        self.query = make_query(text)
        self.matches = array("i")
        self.searched = 0
        self.running = False
        self._pending_step = None
        timeline = self.screen.timeline
        self.screen.detail.mark_search()
        if self.query is None:
            timeline.set_search(None, frozenset())
            self.screen.query_one(FindBar).set_count(Text())
            return
        timeline.set_search(self.query.highlight, frozenset())
        self._run()

    def reset(self) -> None:
        """The analysis started over: search the new events from the beginning."""
        if self.query is not None:
            self.start(self.query.text)

    def grew(self) -> None:
        if self.query is not None and not self.running and self.screen.model.count > self.searched:
            self._run()

    def _run(self) -> None:
        screen = self.screen
        if screen.source.fd is None or self.query is None:
            return
        self.running = True
        fd = os.dup(screen.source.fd)  # the worker owns this one: a reset may close the screen's
        start, end = self.searched, screen.model.count
        events, query, generation = screen.model.events, self.query, self.generation

        def work() -> None:
            worker = get_current_worker()
            last_post = time.monotonic()

            def progress(found: array, _fraction: float) -> None:
                nonlocal last_post
                now = time.monotonic()
                if now - last_post >= PROGRESS_SECONDS:
                    last_post = now
                    screen.post_message(SearchProgress(generation, start, end, array("i", found), False))

            try:
                offsets = array("q", [events[index].offset for index in range(start, end)])
                lengths = array("q", [events[index].length for index in range(start, end)])
                local = search_events(
                    fd, offsets, lengths, query, cancelled=lambda: worker.is_cancelled, progress=progress
                )
            except OSError:
                local = array("i")
            finally:
                os.close(fd)
            if local is not None:
                found = array("i", [start + index for index in local])
                screen.post_message(SearchProgress(generation, start, end, found, True))

        screen.run_worker(work, thread=True, exclusive=True, group="search", exit_on_error=False)

    def apply(self, message: SearchProgress) -> None:
        if message.generation != self.generation:
            return
        # Results of one run replace that run's partial results (found is cumulative).
        kept = bisect_left(self.matches, message.start)
        self.matches = self.matches[:kept] + message.found
        if message.done:
            self.running = False
            self.searched = message.end
        self.screen.timeline.set_search(self.query.highlight if self.query else None, frozenset(self.matches))
        if self._pending_step is not None and (self.matches or message.done):
            direction, self._pending_step = self._pending_step, None
            self.step(direction)
        self.update_count()
        if message.done:
            self.grew()  # events that arrived while this run was busy

    # --- moving -------------------------------------------------------------------------------
    def step(self, direction: int) -> None:
        if self.query is None:
            return
        if not self.matches:
            if self.running:
                self._pending_step = direction
            else:
                self.screen.app.bell()
            return
        timeline, model = self.screen.timeline, self.screen.model
        current = timeline.cursor_event
        current = -1 if current is None else current
        matches = self.matches
        if direction > 0:
            start = bisect_right(matches, current)
            order = chain(range(start, len(matches)), range(0, start))
        else:
            start = bisect_left(matches, current) - 1
            order = chain(range(start, -1, -1), range(len(matches) - 1, start, -1))
        for position in order:
            event = matches[position]
            if model.row_of(event) is not None:
                if (direction > 0 and event <= current) or (direction < 0 and event >= current):
                    self.screen.tell("Search wrapped around.", timeout=2)
                timeline.go_to_event(event)
                return
        self.screen.tell("Every match is hidden by the filter (u clears it).", timeout=4)
        self.screen.app.bell()

    def update_count(self) -> None:
        if self.query is None:
            return
        model = self.screen.model
        matches = self.matches
        if model.filter.active:
            shown = [event for event in matches if model.row_of(event) is not None]
        else:
            shown = matches
        current = self.screen.timeline.cursor_event
        position = bisect_left(shown, current) if current is not None else len(shown)
        here = position < len(shown) and shown[position] == current
        text = Text(no_wrap=True)
        if not shown and not self.running:
            text.append("no match", "bold $error")
        else:
            text.append(f"{position + 1 if here else '-'}/{len(shown):,}", "bold")
            if model.filter.active and len(shown) != len(matches):
                text.append(f" ({len(matches):,} in all)", "dim")
        if self.running:
            text.append(" searching\u2026", "italic")
        self.screen.query_one(FindBar).set_count(text)
