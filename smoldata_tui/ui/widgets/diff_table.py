"""Two timelines side by side, aligned: one row per pair of the diff (virtualised).

Each row is A's call | the operation | B's call. Only the rows on screen are drawn; a row's
text comes from the calls' one-line summaries (already neutralised by the trace engine) and is
drawn as plain ``Text``, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from smoldata_tui.diff import CHANGED, ONLY_A, ONLY_B, SAME, Call, EpisodeDiff
from smoldata_tui.diff.compare import MARKS
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.widgets.styles import StyleCache, set_virtual_size
MIDDLE = 5  # " ~* " between the halves, plus a separator


def side_text(call: Call | None, width: int) -> str:
    if call is None or width <= 0:
        return " " * max(width, 0)
    text = f"{call.line:>6} {clip(call.tool, 10):<6} {call.summary}"
    text = clip(text, width) if len(text) > width else text
    return text.ljust(width)


class DiffTable(ScrollView, can_focus=True, inherit_bindings=False):
    BINDINGS = [
        Binding("down,j", "cursor_down", "Next pair", show=False),
        Binding("up,k", "cursor_up", "Previous pair", show=False),
        Binding("pagedown,ctrl+f", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("home,g", "first", "First pair", show=False),
        Binding("end,G", "last", "Last pair", show=False),
    ]
    COMPONENT_CLASSES = {"diff--same", "diff--changed", "diff--only-a", "diff--only-b", "diff--cursor",
                         "diff--output"}  # fmt: skip
    DEFAULT_CSS = """
    DiffTable { overflow-x: hidden; overflow-y: scroll; }
    DiffTable > .diff--same { color: $text-muted; }
    DiffTable > .diff--changed { color: $text-warning; }
    DiffTable > .diff--only-a { color: $text-error; }
    DiffTable > .diff--only-b { color: $text-success; }
    DiffTable > .diff--output { color: $text-warning; text-style: bold; }
    DiffTable > .diff--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    DiffTable:blur > .diff--cursor { background: $block-cursor-blurred-background; }
    """
    cursor: reactive[int] = reactive(0, init=False, always_update=True)

    class Moved(Message):
        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.diff: EpisodeDiff | None = None
        self._styles = StyleCache(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles.clear()

    @property
    def row_count(self) -> int:
        return len(self.diff.pairs) if self.diff is not None else 0

    def set_diff(self, diff: EpisodeDiff) -> None:
        self.diff = diff
        set_virtual_size(self, Size(self.size.width, self.row_count))
        self.refresh()

    def row_text(self, row: int, width: int) -> Text:
        """One row as text (also for tests): A's call, the operation, B's call."""
        assert self.diff is not None
        pair = self.diff.pairs[row]
        half = max(0, (width - MIDDLE) // 2)
        left = side_text(self.diff.call_a(pair), half)
        right = side_text(self.diff.call_b(pair), width - MIDDLE - half)
        style_name = {SAME: "diff--same", CHANGED: "diff--changed", ONLY_A: "diff--only-a",
                      ONLY_B: "diff--only-b"}[pair.op]  # fmt: skip
        text = Text(no_wrap=True, end="")
        text.append(left, self._styles.get(style_name) if pair.op != ONLY_B else None)
        text.append(f" {MARKS[pair.op]}")
        text.append("*" if pair.output_differs else " ", self._styles.get("diff--output"))
        text.append(" \u2502")
        text.append(right, self._styles.get(style_name) if pair.op != ONLY_A else None)
        text.stylize(self._styles.get(style_name), len(left), len(left) + 3)
        return text

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.scrollable_content_region.width or self.size.width
        base = self._styles.base
        if row >= self.row_count:
            return Strip.blank(self.size.width, base)
        text = self.row_text(row, width)
        text.stylize_before(base)
        if row == self.cursor:
            text.stylize(self._styles.get("diff--cursor"))
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(0, self.size.width, base)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.Moved(new))

    def move_to(self, row: int, *, center: bool = False) -> None:
        if not self.row_count:
            return
        row = max(0, min(row, self.row_count - 1))
        self.cursor = row
        height = self.scrollable_content_region.height or self.size.height or 1
        top = self.scroll_offset.y
        if center:
            self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)
        elif row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def on_resize(self) -> None:
        set_virtual_size(self, Size(self.size.width, self.row_count))

    def _page(self) -> int:
        return max(1, (self.scrollable_content_region.height or self.size.height) - 1)

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_page_down(self) -> None:
        self.move_to(self.cursor + self._page())

    def action_page_up(self) -> None:
        self.move_to(self.cursor - self._page())

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.row_count - 1)

    def on_click(self, event: events.Click) -> None:
        self.move_to(self.scroll_offset.y + event.y)
