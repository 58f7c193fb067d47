"""The timeline: one row per event, virtualised (only the rows on screen are ever built).

A ``ScrollView`` whose ``render_line`` maps a screen row to an event through the
:class:`TimelineModel`, re-reads that event's line with ``os.pread`` and summarises it; the
summary and the finished row strip are kept in bounded LRU caches. Nothing here is per
event: 150,000 events cost an int array at most (when a filter is on).
"""

from __future__ import annotations

import os
import re

from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from smoldata_tui.trace.summary import EventSummary, summarize_line
from smoldata_tui.ui.timeline_model import TimelineModel
from smoldata_tui.ui.widgets.styles import component_style, set_virtual_size
from smoldata_tui.ui.theme_text import readable
from smoldata_tui.ui.widgets.timeline_rows import Columns, RowStyles, header_text, row_text

SUMMARY_CACHE = 4096
STRIP_CACHE = 1024
# A row summary needs the whole line parsed; past this size the row says so instead of
# reading megabytes for one line of text (the detail pane still shows all of it).
ROW_READ_LIMIT = 16 << 20
SHOWN_OF_HUGE_LINE = 64 << 10  # what the detail pane and copy show of a line over ROW_READ_LIMIT


class LineSource:
    """Reads event lines by offset from a descriptor the screen owns (``pread``: no seek)."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd = fd

    def read(self, offset: int, length: int) -> bytes:
        if self.fd is None:
            return b""
        return os.pread(self.fd, length, offset)

    def read_shown(self, offset: int, length: int) -> bytes:
        """The line, or only its first SHOWN_OF_HUGE_LINE bytes when it is over ROW_READ_LIMIT:
        a 2 GiB line is shown clipped, never read whole."""
        return self.read(offset, length if length <= ROW_READ_LIMIT else SHOWN_OF_HUGE_LINE)

    def replace(self, fd: int | None) -> None:
        old, self.fd = self.fd, fd
        if old is not None:
            os.close(old)

    def close(self) -> None:
        self.replace(None)


class TimelineHeader(Widget):
    """The column titles above the timeline (same layout code as the rows)."""

    DEFAULT_CSS = "TimelineHeader { height: 1; }"

    def __init__(self, timeline: Timeline, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeline = timeline
        timeline.column_header = self

    def render(self) -> Text:
        return header_text(self.timeline.columns, self.timeline.row_width, self.timeline.row_styles())


class Timeline(ScrollView, can_focus=True, inherit_bindings=False):
    BINDINGS = [
        Binding("down,j", "cursor_down", "Next event", show=False),
        Binding("up,k", "cursor_up", "Previous event", show=False),
        Binding("pagedown,ctrl+f", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("home,g", "first", "First event", show=False),
        Binding("end,G", "last", "Last event, and follow", key_display="End"),
        Binding("enter", "open_detail", "Detail"),
    ]
    COMPONENT_CLASSES = {
        "timeline--dim",
        "timeline--error",
        "timeline--warning",
        "timeline--info",
        "timeline--success",
        "timeline--tool",
        "timeline--error-row",
        "timeline--warning-row",
        "timeline--unfinished",
        "timeline--match",
        "timeline--cursor",
    }
    DEFAULT_CSS = """
    Timeline {
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-gutter: stable;
    }
    Timeline > .timeline--dim { color: $text-muted; }
    Timeline > .timeline--error { color: $text-error; text-style: bold; }
    Timeline > .timeline--warning { color: $text-warning; }
    Timeline > .timeline--info { color: $text-muted; }
    Timeline > .timeline--success { color: $text-success; }
    Timeline > .timeline--tool { color: $text-accent; }
    Timeline > .timeline--error-row { background: $error 20%; }
    Timeline > .timeline--warning-row { background: $warning 8%; }
    Timeline > .timeline--unfinished { color: $text-warning; text-style: bold reverse; }
    Timeline > .timeline--match { background: $warning-muted; color: $text; }  /* 5:1 in every theme ($warning 45%: 3.7:1) */
    Timeline > .timeline--cursor { background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground; }
    Timeline:focus > .timeline--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    """

    cursor: reactive[int] = reactive(0, repaint=False, init=False)

    class CursorMoved(Message):
        """The selected event changed (None: no rows); ``by_user`` False when new rows moved it."""

        def __init__(self, event: int | None, by_user: bool = True) -> None:
            super().__init__()
            self.event = event
            self.by_user = by_user

    class DetailRequested(Message):
        """Enter or a double click on a row."""

        def __init__(self, event: int) -> None:
            super().__init__()
            self.event = event

    class FollowRequested(Message):
        """End/G: go to the last event and stay there (playback also jumps to its end)."""

    class PendingChanged(Message):
        """How many rows arrived below the cursor while it was not following the end."""

        def __init__(self, pending: int) -> None:
            super().__init__()
            self.pending = pending

    def __init__(self, model: TimelineModel, source: LineSource, *, tail: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.model = model
        self.source = source
        self.tail = tail  # follow the end: new rows move the cursor along
        self.live = tail  # new rows below a cursor that is not following are counted
        self.pending = 0
        self._moved_by_user = True
        self.columns = Columns.fit(0, 0, 200)
        self.column_header: TimelineHeader | None = None
        self.highlight: re.Pattern[str] | None = None
        self.match_events: frozenset[int] = frozenset()
        self._summaries: LRUCache[int, EventSummary] = LRUCache(SUMMARY_CACHE)
        self._strips: LRUCache[tuple, Strip] = LRUCache(STRIP_CACHE)
        self._styles: RowStyles | None = None
        self._generation = 0

    # --- the data -----------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return self.model.row_count

    @property
    def row_width(self) -> int:
        """Cells a row gets: the view without its scrollbar."""
        return self.scrollable_content_region.width

    @property
    def cursor_event(self) -> int | None:
        if self.row_count == 0:
            return None
        return self.model.event_at(min(self.cursor, self.row_count - 1))

    def summary(self, event: int) -> EventSummary:
        summary = self._summaries.get(event)
        if summary is None:
            record = self.model.record(event)
            if record.length > ROW_READ_LIMIT:
                summary = EventSummary(title=f"({record.length:,} bytes: open the detail pane to read it)")
            else:
                raw = self.source.read(record.offset, record.length)
                started = self.model.step_started.get(record.step) if record.kind == "step_finish" else None
                summary = summarize_line(raw, record.kind, record.piece, step_started_ms=started)
            self._summaries[event] = summary
        return summary

    def invalidate(self, *, summaries: bool = False) -> None:
        """Forget rendered rows (and the parsed summaries): after a reset, a theme or search change."""
        self._generation += 1
        self._strips.clear()
        if summaries:
            self._summaries.clear()
        self.refresh()

    def rows_changed(self, added: int) -> None:
        """The model grew or was refiltered: resize, keep the cursor where the user wants it."""
        count = self.row_count
        self._fit_columns()
        set_virtual_size(self, Size(self.row_width, count))
        if count == 0:
            self.cursor = 0
            self.refresh()
            return
        if self.tail:
            self.move_cursor(count - 1, by_user=False)
        elif added and self.live:
            self.pending += added
            self.post_message(self.PendingChanged(self.pending))
        if self.cursor >= count:
            self.move_cursor(count - 1, by_user=False)
        self.refresh()

    def set_search(self, highlight: re.Pattern[str] | None, match_events: frozenset[int]) -> None:
        self.highlight = highlight
        self.match_events = match_events
        self.invalidate()

    # --- rendering ----------------------------------------------------------------------------
    def row_styles(self) -> RowStyles:
        if self._styles is None:

            def get(name: str) -> Style:
                return component_style(self, f"timeline--{name}")

            self._styles = RowStyles(
                base=self.rich_style,
                dim=get("dim"),
                error=get("error"),
                warning=get("warning"),
                info=get("info"),
                success=get("success"),
                tool=get("tool"),
                error_row=get("error-row"),
                warning_row=get("warning-row"),
                unfinished=get("unfinished"),
                match=get("match"),
                cursor=readable(get("cursor")),
            )
        return self._styles

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._strips.clear()
        self._generation += 1

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.row_width
        if row >= self.row_count or width <= 0:
            return Strip.blank(width, self.row_styles().base)
        event = self.model.event_at(row)
        selected = row == self.cursor
        key = (event, width, selected, self._generation, self.model.first_timestamp is None)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._render_row(event, width, selected)
            self._strips[key] = strip
        return strip

    def _render_row(self, event: int, width: int, selected: bool) -> Strip:
        styles = self.row_styles()
        model = self.model
        record = model.record(event)
        text = row_text(
            record,
            self.summary(event),
            model.findings_of(event),
            self.columns,
            width,
            styles,
            model.first_timestamp,
            self.highlight,
            event in self.match_events,
        )
        if selected:
            text.stylize(styles.cursor)
        segments = list(text.render(self.app.console))
        return Strip(segments, text.cell_len).crop_extend(0, width, styles.base)

    def _fit_columns(self) -> None:
        columns = Columns.fit(self.model.max_line, self.model.max_step, self.row_width)
        if columns != self.columns:
            self.columns = columns
            self._strips.clear()
            if self.column_header is not None:
                self.column_header.refresh()

    def on_resize(self) -> None:
        # Textual also sends Resize when only the virtual size changed (every new row): the
        # rendered rows stay valid unless the width did.
        width = self.row_width
        if width != self.virtual_size.width:
            self.virtual_size = Size(width, self.row_count)
            self._strips.clear()
            self._fit_columns()

    # --- the cursor ---------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old)
        self.refresh_line(new)
        self.post_message(self.CursorMoved(self.cursor_event, self._moved_by_user))

    def move_cursor(self, row: int, *, by_user: bool = True, center: bool = False) -> None:
        count = self.row_count
        if count == 0:
            return
        row = max(0, min(row, count - 1))
        self._moved_by_user = by_user
        if by_user:
            self.tail = row == count - 1
        if row == count - 1 and self.pending:
            self.pending = 0
            self.post_message(self.PendingChanged(0))
        self.cursor = row
        self.show_row(row, center=center)

    def show_row(self, row: int, *, center: bool = False) -> None:
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if center:
            target = row - height // 2
        elif row < top:
            target = row
        elif row >= top + height:
            target = row - height + 1
        else:
            return
        self.scroll_to(y=max(0, target), animate=False, force=True, immediate=True)

    def go_to_event(self, event: int, *, center: bool = True) -> bool:
        """Select the row of ``event``; False when the filter hides it."""
        row = self.model.row_of(event)
        if row is None:
            return False
        self.move_cursor(row, center=center)
        return True

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor - 1)

    def action_page_down(self) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=self.scroll_offset.y + height, animate=False, force=True, immediate=True)
        self.move_cursor(self.cursor + height)

    def action_page_up(self) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=max(0, self.scroll_offset.y - height), animate=False, force=True, immediate=True)
        self.move_cursor(self.cursor - height)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.row_count - 1)
        self.tail = True
        self.post_message(self.FollowRequested())

    def action_open_detail(self) -> None:
        event = self.cursor_event
        if event is not None:
            self.post_message(self.DetailRequested(event))

    # --- the mouse ----------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        row = self.scroll_offset.y + offset.y
        if row >= self.row_count:
            return
        self.move_cursor(row)
        if event.chain >= 2:
            self.action_open_detail()

    @on(events.MouseScrollUp)
    def _stop_following(self) -> None:
        # Scrolling up to read must not be yanked back down by the next event.
        self.tail = False
