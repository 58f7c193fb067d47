"""The conversation view: the run read as a transcript (prompt, the model's words, each call).

Virtualised like the timeline, for traces of 20,000 calls: the view draws a window of items
around the selected one (``WINDOW`` on each side), each item rendered once per width and fold
state into strips kept in an LRU cache. Only the events in the window are ever re-read from the
file. Selecting an item posts :class:`ConversationView.Selected` (the screen moves the timeline
cursor to its row); the timeline's cursor selects the item holding its event.
"""

from __future__ import annotations

import sys

import io
from bisect import bisect_right
from collections.abc import Callable

from rich.console import Console, Group
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from smoldata_tui.trace.summary import parse_line
from smoldata_tui.ui.conversation_render import Look, event_parts, prompt_parts, recovered_parts
from smoldata_tui.ui.theme_text import rich_theme
from smoldata_tui.ui.timeline_model import TimelineModel
from smoldata_tui.ui.widgets.styles import set_virtual_size

PROMPT = -1  # the item before every event: the task prompt, when one is known
RECOVERED = sys.maxsize  # the item after every event: calls the agent left running, when it was stopped
# step_finish: drawn only when the step ended abnormally (length, unknown...); otherwise an empty item
KINDS = frozenset({"step_start", "text", "reasoning", "tool_use", "error", "step_finish"})
WINDOW = 12  # items drawn on each side of the selected one (a screenful, and some)
GUTTER = 2  # the selected item's bar, and a space
ITEM_CACHE = 256
READ_LIMIT = 16 << 20  # a longer line is shown clipped by the timeline's detail pane, not here


class ConversationView(ScrollView, can_focus=True, inherit_bindings=False):
    BINDINGS = [
        Binding("down,j", "next_item", "Next message or call", show=False),
        Binding("up,k", "previous_item", "Previous message or call", show=False),
        Binding("enter", "toggle_fold", "Fold / unfold the selected item's output"),
        Binding("pagedown,ctrl+f", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("home,g", "first_item", "First item (the prompt)", show=False),
        Binding("end,G", "last_item", "Last item", show=False),
    ]
    DEFAULT_CSS = """
    ConversationView { overflow-x: hidden; overflow-y: scroll; padding: 0 0 0 1; }
    """

    class Selected(Message):
        """The reader selected an item (``event`` is PROMPT for the task prompt)."""

        def __init__(self, event: int) -> None:
            super().__init__()
            self.event = event

    def __init__(self, model: TimelineModel, read: Callable[[int, int], bytes], **kwargs) -> None:
        super().__init__(**kwargs)
        self.model = model
        self.read = read
        self.items: list[int] = []
        self.scanned = 0  # events of the model looked at so far
        self.prompt: tuple[str, str] | None = None  # (text, where it came from)
        self.recovered: tuple[list[dict], str | None] | None = None  # (recovered calls, the episode's status)
        self.selected = 0
        self.expanded: set[int] = set()
        self._cache: LRUCache[tuple, list[Strip]] = LRUCache(ITEM_CACHE)
        self._rich_console: Console | None = None
        self._rows: list[Strip] = []
        self._tops: list[int] = []  # first row of each item of the window
        self._window = (0, 0)
        self._drawn_width = -1
        self._drawing = False  # a redraw's own scrolling must not move the window again

    # --- the items ----------------------------------------------------------------------------
    def set_prompt(self, prompt: str | None, source: str) -> None:
        had = self.prompt is not None
        self.prompt = (prompt, source) if prompt else None
        if had != (self.prompt is not None):
            self.reset()
        elif self.prompt is not None:
            self._cache.clear()
            self.redraw()

    def set_recovered(self, calls: list[dict], status: str | None) -> None:
        recovered = (list(calls), status) if calls else None
        if recovered != self.recovered:
            self.recovered = recovered
            self.reset()

    def reset(self) -> None:
        """Start over (a new trace, or the prompt appeared): items are rebuilt from the model."""
        self.items = [PROMPT] if self.prompt is not None else []
        self.scanned = 0
        self.selected = 0
        self._cache.clear()
        self.sync()

    def sync(self) -> None:
        """Take the events the model gained; redraw if the window shows the end."""
        model = self.model
        if model.count < self.scanned:
            self.reset()
            return
        if model.count == self.scanned and self._rows:
            return
        events, items = model.events, self.items
        if items and items[-1] == RECOVERED:
            items.pop()  # stays the last item
        for index in range(self.scanned, model.count):
            if events[index].kind in KINDS:
                items.append(index)
        if self.recovered is not None:
            items.append(RECOVERED)
        self.scanned = model.count
        if not self._rows or self._window[1] >= len(items) - WINDOW or len(items) <= 2 * WINDOW + 1:
            self.redraw()

    def item_of(self, event: int) -> int:
        """The item showing ``event``: the one at or before it."""
        return max(0, bisect_right(self.items, event) - 1)

    @property
    def selected_event(self) -> int | None:
        return self.items[self.selected] if self.items else None

    def select_event(self, event: int | None) -> None:
        """The timeline's cursor moved: select the item holding its event (no message back)."""
        if event is None or not self.items:
            return
        self.sync()
        self._select(self._drawn_item(self.item_of(event), -1), announce=False)

    def _drawn_item(self, index: int, direction: int) -> int:
        """``index``, or the nearest item that draws something, looking in ``direction`` first
        (an ordinary step end draws nothing)."""
        if not self.items:
            return 0
        index = max(0, min(index, len(self.items) - 1))
        for step in (direction, -direction):
            probe = index
            while 0 <= probe < len(self.items):
                if self.item_strips(self.items[probe]):
                    return probe
                probe += step
        return index

    def _select(self, index: int, *, announce: bool) -> None:
        if not self.items:
            return
        index = max(0, min(index, len(self.items) - 1))
        changed = index != self.selected
        self.selected = index
        lo, hi = self._window
        if not (lo + 3 <= index < hi - 3) or not self._rows:
            self.redraw()
        else:
            self._draw(keep_scroll=True)
        self._show_selected()
        if changed and announce:
            self.post_message(self.Selected(self.items[index]))

    # --- drawing ------------------------------------------------------------------------------
    @property
    def body_width(self) -> int:
        return max(10, (self.scrollable_content_region.width or self.size.width) - GUTTER)

    def look(self, expanded: bool) -> Look:
        background = self.styles.background
        return Look(dark=self.app.current_theme.dark, expanded=expanded, background=background.hex if background.a else None)

    def console(self) -> Console:
        if self._rich_console is None:
            self._rich_console = Console(file=io.StringIO(), theme=rich_theme(self.app.theme_variables), color_system="truecolor",
                                    force_terminal=True, markup=False, emoji=False, highlight=False, legacy_windows=False)  # fmt: skip
        return self._rich_console

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._rich_console = None
        self._cache.clear()
        if self.is_mounted and self._rows:
            self.redraw()

    def item_strips(self, event: int) -> list[Strip]:
        width = self.body_width
        expanded = event in self.expanded
        key = (event, width, expanded)
        strips = self._cache.get(key)
        if strips is not None:
            return strips
        look = self.look(expanded)
        if event == PROMPT:
            parts = prompt_parts(*self.prompt, look) if self.prompt else []
        elif event == RECOVERED:
            parts = recovered_parts(*self.recovered) if self.recovered else []
        else:
            record = self.model.record(event)
            raw = self.read(record.offset, min(record.length, READ_LIMIT))
            parts = event_parts(record.kind, parse_line(raw, record.piece), look, record.step)
            if record.length > READ_LIMIT:
                from rich.text import Text

                parts.append(Text(f"(line {record.line} is {record.length:,} bytes: Enter on the timeline shows it)", "conv.warning"))
        console = self.console()
        options = console.options.update(width=width, min_width=width, max_width=width, height=None)
        lines = console.render_lines(Group(*parts), options, pad=False, new_lines=False) if parts else []
        strips = [Strip(line) for line in lines]
        if strips:
            strips.append(Strip([]))  # a blank row between items
        self._cache[key] = strips
        return strips

    def redraw(self) -> None:
        """Centre the window on the selected item and draw it again."""
        count = len(self.items)
        lo = max(0, self.selected - WINDOW)
        hi = min(count, self.selected + WINDOW + 1)
        self._draw(window=(lo, hi), keep_scroll=True)

    def _draw(self, *, window: tuple[int, int] | None = None, keep_scroll: bool) -> None:
        if not self.is_mounted or self.size.width == 0:
            return
        self._drawing = True
        try:
            self._draw_window(window, self._anchor() if keep_scroll else None)
        finally:
            self._drawing = False
        self.refresh()

    def _draw_window(self, window: tuple[int, int] | None, anchor: tuple[int, int] | None) -> None:
        lo, hi = window if window is not None else self._window
        self._window = (lo, hi)
        rows: list[Strip] = []
        tops: list[int] = []
        for index in range(lo, hi):
            tops.append(len(rows))
            rows.extend(self.item_strips(self.items[index]))
        self._rows, self._tops = rows, tops
        self._drawn_width = self.body_width
        set_virtual_size(self, Size(self.body_width + GUTTER, len(rows)))
        if anchor is not None:
            event, offset = anchor
            if event in self.items[lo:hi]:
                top = tops[self.items.index(event, lo, hi) - lo]
                self.scroll_to(y=max(0, top + offset), animate=False, force=True, immediate=True)

    def _anchor(self) -> tuple[int, int] | None:
        """The item at the top of the view and how far into it (to keep it still on a redraw)."""
        if not self._tops:
            return None
        y = int(self.scroll_offset.y)
        position = max(0, bisect_right(self._tops, y) - 1)
        index = self._window[0] + position
        if index >= len(self.items):
            return None
        return self.items[index], y - self._tops[position]

    def _item_span(self, index: int) -> tuple[int, int] | None:
        lo, hi = self._window
        if not lo <= index < hi:
            return None
        top = self._tops[index - lo]
        bottom = self._tops[index - lo + 1] if index + 1 < hi else len(self._rows)
        return top, bottom

    def _show_selected(self) -> None:
        span = self._item_span(self.selected)
        if span is None:
            return
        top, bottom = span
        height = max(1, self.scrollable_content_region.height)
        y = int(self.scroll_offset.y)
        if top < y or bottom - top > height:
            y = top
        elif bottom > y + height:
            y = bottom - height
        else:
            return
        self.scroll_to(y=max(0, y), animate=False, force=True, immediate=True)

    def on_resize(self) -> None:
        if self.body_width != self._drawn_width and self.items:
            self.redraw()
            self._show_selected()

    def render_line(self, y: int) -> Strip:
        row = int(self.scroll_offset.y) + y
        base = self.rich_style
        width = self.size.width
        if row >= len(self._rows):
            return Strip.blank(width, base)
        position = max(0, bisect_right(self._tops, row) - 1)
        selected = self._window[0] + position == self.selected
        strip = self._rows[row]
        if selected and self._item_span(self.selected) is not None and row < self._item_span(self.selected)[1] - 1:
            bar = Style(color=self._bar_colour(), bold=True)
            gutter = Strip([Segment("\u258c ", bar)], GUTTER)
        else:
            gutter = Strip.blank(GUTTER)
        return Strip.join([gutter, strip]).apply_style(base).crop_extend(0, width, base)

    def _bar_colour(self):
        from textual.color import Color

        try:
            return Color.parse(self.app.theme_variables["primary"]).rich_color
        except Exception:  # noqa: BLE001
            return None

    # --- keys and mouse -----------------------------------------------------------------------
    def action_next_item(self) -> None:
        self._select(self._drawn_item(self.selected + 1, 1), announce=True)

    def action_previous_item(self) -> None:
        self._select(self._drawn_item(self.selected - 1, -1), announce=True)

    def action_first_item(self) -> None:
        self._select(0, announce=True)

    def action_last_item(self) -> None:
        self.sync()
        self._select(self._drawn_item(len(self.items) - 1, -1), announce=True)

    def action_page_down(self) -> None:
        self.scroll_to(y=self.scroll_offset.y + max(1, self.scrollable_content_region.height - 1), animate=False)
        self._edge_reached()

    def action_page_up(self) -> None:
        self.scroll_to(y=max(0, self.scroll_offset.y - max(1, self.scrollable_content_region.height - 1)), animate=False)
        self._edge_reached()

    def action_toggle_fold(self) -> None:
        event = self.selected_event
        if event is None:
            return
        self.expanded.symmetric_difference_update({event})
        self._draw(keep_scroll=True)
        self._show_selected()

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self._tops:
            return
        row = int(self.scroll_offset.y) + offset.y
        if row >= len(self._rows):
            return
        index = self._window[0] + max(0, bisect_right(self._tops, row) - 1)
        if index == self.selected:
            self.action_toggle_fold()
        else:
            self._select(index, announce=True)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._edge_reached()

    def _edge_reached(self) -> None:
        """Scrolling (the wheel, page keys) past the drawn window moves the window, not the selection."""
        if self._drawing:
            return
        lo, hi = self._window
        y, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        if hi < len(self.items) and y + height >= len(self._rows) - 1:
            self._draw(window=(min(lo + WINDOW, hi), min(len(self.items), hi + WINDOW)), keep_scroll=True)
        elif lo > 0 and y == 0:
            self._draw(window=(max(0, lo - WINDOW), max(hi - WINDOW, lo)), keep_scroll=True)

    # --- for tests and copying ----------------------------------------------------------------
    def shown_text(self) -> str:
        """The rows drawn in the window, as plain text."""
        return "\n".join(strip.text.rstrip() for strip in self._rows)
