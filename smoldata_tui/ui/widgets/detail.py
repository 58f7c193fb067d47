"""The detail pane: every field of the selected event, untruncated, wrapped, scrollable.

Also virtualised: a 10 MB tool output is a list of wrapped rows and only the rows on screen
become strips. The lines arrive already neutralised (see ``ui/detail_content.py``); they are
wrapped at the pane's width (by cells, so wide characters stay whole) and drawn as plain
``Text``, never markup. Mouse selection copies the wrapped text.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Offset, Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from smoldata_tui.ui.widgets.styles import StyleCache, set_virtual_size

STYLES = ("heading", "title", "muted", "code", "error", "warning", "info", "json", "output", "plain")
Block = tuple[str, list[str]]  # (style name, lines): see ui/detail_content.py
Rows = tuple[list[str], list[str]]  # wrapped row texts, and the style name of each row


def wrap_blocks(blocks: list[Block], width: int) -> Rows:
    """Cut every line into rows of at most ``width`` cells, on word boundaries (a blank line stays one row)."""
    width = max(1, width)
    texts: list[str] = []
    styles: list[str] = []
    for style, lines in blocks:
        if max(map(len, lines), default=0) <= width and all(map(str.isascii, lines)):
            texts.extend(lines)  # the common case, done in C: nothing to cut
            styles.extend([style] * len(lines))
            continue
        for text in lines:
            if len(text) <= width and (text.isascii() or cell_len(text) <= width):
                chunks = [text]
            elif text.isascii():
                chunks = word_wrap_ascii(text, width)
            else:
                chunks = [text[start:end].rstrip(" ") or text[start:end] for start, end in _word_spans(text, width)]
            texts.extend(chunks)
            styles.extend([style] * len(chunks))
    return texts, styles


def word_wrap_ascii(text: str, width: int) -> list[str]:
    """Rows of at most ``width`` characters, cut after a space when one is in the second half of
    the row (a word longer than that is cut where the row ends)."""
    rows = []
    start, end = 0, len(text)
    while end - start > width:
        cut = text.rfind(" ", start + width // 2, start + width + 1)
        if cut == -1:
            rows.append(text[start : start + width])
            start += width
        else:
            rows.append(text[start:cut])
            start = cut + 1
    rows.append(text[start:])
    return rows


def _word_spans(text: str, width: int) -> list[tuple[int, int]]:
    """Rich's word wrapping by cells (wide characters stay whole; a long word is folded)."""
    from rich._wrap import divide_line

    offsets = [0, *divide_line(text, width, fold=True), len(text)]
    return [(start, end) for start, end in zip(offsets, offsets[1:]) if end > start]


class DetailView(ScrollView, can_focus=True, inherit_bindings=False):
    ALLOW_SELECT = True
    BINDINGS = [
        Binding("down,j", "scroll_down", "Scroll down", show=False),
        Binding("up,k", "scroll_up", "Scroll up", show=False),
        Binding("pagedown,ctrl+f", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("home,g", "scroll_home", "Top of the detail", show=False),
        Binding("end,G", "scroll_end", "End of the detail", show=False),
    ]
    COMPONENT_CLASSES = {f"detail--{name}" for name in (*STYLES, "match")}
    DEFAULT_CSS = """
    DetailView { overflow-x: hidden; overflow-y: scroll; padding: 0 1; }
    DetailView > .detail--heading { color: $text-accent; text-style: bold; }
    DetailView > .detail--title { text-style: bold; }
    DetailView > .detail--muted { color: $text-muted; }
    DetailView > .detail--code { color: $text-secondary; }
    DetailView > .detail--error { color: $text-error; }
    DetailView > .detail--warning { color: $text-warning; }
    DetailView > .detail--info { color: $text-muted; }
    DetailView > .detail--json { color: $text-primary; }
    DetailView > .detail--output { }
    DetailView > .detail--plain { }
    DetailView > .detail--match { background: $warning-muted; color: $text; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._blocks: list[Block] = [("muted", ["Select an event to see its detail."])]
        self._texts: list[str] = []
        self._styles: list[str] = []
        self._wrapped_width = -1
        self._style_cache = StyleCache(self)
        self.highlight: re.Pattern[str] | None = None  # the search query, marked in the rows

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache.clear()

    @property
    def blocks(self) -> list[Block]:
        return self._blocks

    @property
    def text(self) -> str:
        """Everything the pane holds, one logical line per line (for tests and copying)."""
        return "\n".join("\n".join(lines) for _style, lines in self._blocks)

    @property
    def wrap_width(self) -> int:
        return self.scrollable_content_region.width or self.size.width

    def set_blocks(self, blocks: list[Block], *, rows: Rows | None = None, rows_width: int = -1) -> None:
        """Show ``blocks``; ``rows`` may bring them already wrapped at ``rows_width`` (by a worker)."""
        self._blocks = blocks
        self._wrapped_width = -1
        if rows is not None and rows_width == self.wrap_width:
            self._texts, self._styles = rows
            self._wrapped_width = rows_width
            set_virtual_size(self, Size(rows_width, len(self._texts)))
        self._rewrap()
        self.scroll_to(0, 0, animate=False, force=True, immediate=True)
        self.refresh()

    def set_highlight(self, pattern: re.Pattern[str] | None) -> None:
        """Mark the search query; scroll to its first occurrence (a match cut by wrapping is missed)."""
        self.highlight = pattern
        if pattern is not None:
            self._rewrap()
            row = next((index for index, text in enumerate(self._texts) if pattern.search(text)), None)
            if row is not None:
                self.scroll_to(y=max(0, row - 2), animate=False, force=True, immediate=True)
        self.refresh()

    def _rewrap(self) -> None:
        width = self.wrap_width
        if width <= 0 or width == self._wrapped_width:
            return
        self._wrapped_width = width
        self._texts, self._styles = wrap_blocks(self._blocks, width)
        set_virtual_size(self, Size(width, len(self._texts)))

    def on_resize(self) -> None:
        self._rewrap()

    def render_line(self, y: int) -> Strip:
        self._rewrap()
        row = self.scroll_offset.y + y
        width = self.size.width
        base = self._style_cache.base
        if row >= len(self._texts):
            return Strip.blank(width, base)
        text = self._texts[row]
        style = self._style_cache.get(f"detail--{self._styles[row]}")
        selection = self.text_selection
        span = selection.get_span(row) if selection is not None else None
        marked = self.highlight is not None and self.highlight.search(text) is not None
        if span is None and not marked:
            # One style per row: a single segment, no Text to lay out (rows are redrawn often).
            strip = Strip([Segment(text, base + style)], cell_len(text))
        else:
            line = Text(text, no_wrap=True, end="", style=base)
            line.stylize(style)
            if marked:
                line.highlight_regex(self.highlight, self._style_cache.get("detail--match"))
            if span is not None:
                start, end = span
                selected = self.screen.get_component_rich_style("screen--selection")
                line.stylize(selected, start, len(text) if end == -1 else end)
            strip = Strip(line.render(self.app.console), line.cell_len)
        return strip.crop_extend(0, width, base).apply_offsets(0, row)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        if not self._texts:
            return None
        first = selection.start.y if selection.start is not None else 0
        last = selection.end.y if selection.end is not None else len(self._texts) - 1
        # Only the selected rows are joined: selecting a word must not copy a 10 MB output.
        start = Offset(selection.start.x, 0) if selection.start is not None else None
        end = Offset(selection.end.x, last - first) if selection.end is not None else None
        text = "\n".join(self._texts[first : last + 1])
        return Selection(start, end).extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
