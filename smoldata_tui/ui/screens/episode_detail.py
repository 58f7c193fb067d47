"""The episode screen's detail pane: what it shows for the selected event, and when."""

from __future__ import annotations


from textual.timer import Timer
from textual.worker import get_current_worker
from textual.screen import Screen

from smoldata_tui.ui.detail_content import Block, detail_blocks
from smoldata_tui.ui.widgets.detail import DetailView, Rows, wrap_blocks


# Events bigger than this get their detail built on a worker thread (a 10 MB output must not
# stall the keyboard); smaller ones at once, so the pane keeps up with the cursor.
IN_THREAD_ABOVE = 256 << 10
# While new rows carry the cursor along (following a live trace), redraw at most this often.
FOLLOW_SECONDS = 0.3


class DetailController:
    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.raw_mode = False
        self._generation = 0  # of the latest request: a slow build for an older one is dropped
        self._follow_timer: Timer | None = None

    @property
    def view(self) -> DetailView:
        return self.screen.query_one(DetailView)

    def cursor_moved(self, event: int | None, by_user: bool) -> None:
        if by_user:
            self.show(event)
        elif self._follow_timer is None:
            self._follow_timer = self.screen.set_timer(FOLLOW_SECONDS, self._show_followed)

    def _show_followed(self) -> None:
        self._follow_timer = None
        self.show(self.screen.timeline.cursor_event)

    def show(self, event: int | None) -> None:
        screen = self.screen
        if not screen.panel_visible and screen.size.width:
            return  # built when the panel opens
        self._generation += 1
        view = self.view
        if event is None:
            view.set_blocks([("muted", ["No events yet."])])
            return
        record = screen.model.record(event)
        if record.length > IN_THREAD_ABOVE:
            view.set_blocks([("muted", [f"Reading line {record.line} ({record.length:,} bytes)\u2026"])])
            generation, width = self._generation, view.wrap_width
            screen.run_worker(
                lambda: self._build_in_thread(event, generation, width),
                thread=True,
                exclusive=True,
                group="detail",
                exit_on_error=False,
            )
        else:
            view.set_blocks(self.blocks(event))
            self.mark_search()

    def mark_search(self) -> None:
        """Mark the search query in the pane, scrolled to its first occurrence."""
        query = self.screen.search.query
        if self.screen.panel_visible:
            self.view.set_highlight(query.highlight if query is not None else None)

    def blocks(self, event: int) -> list[Block]:
        model = self.screen.model
        record = model.record(event)
        raw = self.screen.source.read_shown(record.offset, record.length)
        started = model.step_started.get(record.step) if record.kind == "step_finish" else None
        return detail_blocks(
            record,
            raw,
            model.findings_of(event),
            first_timestamp=model.first_timestamp,
            step_started=started,
            raw_mode=self.raw_mode,
        )

    def _build_in_thread(self, event: int, generation: int, width: int) -> None:
        blocks = self.blocks(event)
        rows = wrap_blocks(blocks, width)  # wrapping 100,000 lines takes time too: also here
        if not get_current_worker().is_cancelled:
            self.screen.app.call_from_thread(self._built, blocks, rows, width, generation)

    def _built(self, blocks: list[Block], rows: Rows, width: int, generation: int) -> None:
        if generation == self._generation:
            self.view.set_blocks(blocks, rows=rows, rows_width=width)
            self.mark_search()
