"""The fleet table's rows: a virtualised list (only the rows on screen are ever drawn).

10,000 episodes cost a list of references; each visible row is built from its summary when
drawn. The column titles sit in :class:`FleetHeader` above, laid out by the same code.
"""

from __future__ import annotations

from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.ui.screens.fleet_view import COLUMNS, GroupRow, Row, group_cell
from smoldata_tui.ui.theme_text import themed

MARK_WIDTH = 2  # "● " before a marked row


def layout(width: int) -> list[int]:
    """Column widths for a terminal ``width``: the episode column takes what the others leave."""
    fixed = sum(column.width + 1 for column in COLUMNS[1:]) + MARK_WIDTH
    return [max(16, width - fixed - 1), *(column.width for column in COLUMNS[1:])]


def line_of(cells: list[Text], widths: list[int], prefix: Text) -> Text:
    line = prefix.copy()
    for cell, width, column in zip(cells, widths, COLUMNS, strict=True):
        cell = cell.copy()
        cell.no_wrap = True
        if column.key == "episode" and cell.cell_len > width:
            cell = Text("\u2026" + cell.plain[cell.cell_len - width + 1 :], style=cell.style)  # keep the tail
        cell.truncate(width, overflow="ellipsis")
        padding = " " * (width - cell.cell_len)
        if column.right:
            line.append(padding)
            line.append_text(cell)
        else:
            line.append_text(cell)
            line.append(padding)
        line.append(" ")
    return line


class FleetHeader(Widget):
    DEFAULT_CSS = "FleetHeader { height: 1; background: $panel; }"

    def __init__(self, table: FleetTable) -> None:
        super().__init__()
        self.table = table

    def render(self) -> Text:
        widths = layout(self.size.width)
        cells = []
        for column in COLUMNS:
            title = column.title
            if column.key == self.table.sort_key:
                title += " \u25bc" if self.table.descending else " \u25b2"
            cells.append(Text(title, "bold"))
        return line_of(cells, widths, Text(" " * MARK_WIDTH))


class FleetTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("down,j", "cursor_down", "Next episode", show=False),
        Binding("up,k", "cursor_up", "Previous episode", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home,g", "first", "First row", show=False),
        Binding("end,G", "last", "Last row", show=False),
    ]
    DEFAULT_CSS = """
    FleetTable { height: 1fr; overflow-x: hidden; }
    FleetTable > .fleet--cursor { background: $primary 55%; }
    FleetTable:focus > .fleet--cursor { background: $primary 85%; }
    FleetTable > .fleet--group { background: $boost; }
    """
    COMPONENT_CLASSES = {"fleet--cursor", "fleet--group"}

    cursor: reactive[int] = reactive(0, repaint=False, init=False)

    class CursorMoved(Message):
        pass

    class Opened(Message):
        def __init__(self, summary: EpisodeSummary) -> None:
            super().__init__()
            self.summary = summary

    def __init__(self, folder: Path, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.folder = folder
        self.rows: list[Row] = []
        self.marked: list[str] = []
        self.sort_key = "episode"
        self.descending = False

    # --- content ------------------------------------------------------------------------------
    def set_rows(self, rows: list[Row], *, keep: str | None = None) -> None:
        """Show ``rows``; the cursor stays on the episode ``keep`` (a path) when it is still shown."""
        self.rows = rows
        self.virtual_size = Size(self.size.width, len(rows))
        target = self.cursor
        if keep is not None:
            for index, row in enumerate(rows):
                if isinstance(row, EpisodeSummary) and row.path == keep:
                    target = index
                    break
        self.cursor = max(0, min(target, len(rows) - 1))
        self.show_row(self.cursor)
        self.refresh()

    @property
    def current(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.rows):
            return Strip.blank(width)
        row = self.rows[index]
        if isinstance(row, GroupRow):
            text = group_cell(row, width)
            text.stylize(self.get_component_rich_style("fleet--group"))
        else:
            mark = Text("\u25cf ", "bold $accent") if row.path in self.marked else Text("  ")
            text = line_of([column.cell(row, self.folder) for column in COLUMNS], layout(width), mark)
        text = themed(text, self.app.theme_variables)
        if index == self.cursor:
            text.stylize(self.get_component_rich_style("fleet--cursor"))
        segments = list(text.render(self.app.console))
        return Strip(segments, text.cell_len).crop_extend(0, width, Style())

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows))

    # --- the cursor ---------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(old - self.scroll_offset.y)
        self.refresh_line(new - self.scroll_offset.y)
        self.post_message(self.CursorMoved())

    def show_row(self, row: int) -> None:
        height = self.scrollable_content_region.height
        top = self.scroll_offset.y
        if row < top:
            target = row
        elif height and row >= top + height:
            target = row - height + 1
        else:
            return
        self.scroll_to(y=max(0, target), animate=False, force=True, immediate=True)

    def move_cursor(self, row: int) -> None:
        if self.rows:
            self.cursor = max(0, min(row, len(self.rows) - 1))
            self.show_row(self.cursor)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.rows) - 1)

    def on_click(self, event) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < len(self.rows):
            self.move_cursor(row)
            if event.chain == 2 and isinstance(self.current, EpisodeSummary):
                self.post_message(self.Opened(self.current))
