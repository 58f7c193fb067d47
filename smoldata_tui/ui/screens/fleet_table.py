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
from smoldata_tui.ui.screens.fleet_view import COLUMNS, Column, GroupRow, Row, group_cell
from smoldata_tui.ui.theme_text import readable, themed

MARK_WIDTH = 2  # "● " before a marked row


# When every column cannot fit (80 columns), the episode and then these, in this order, as many as
# fit; ←/→ move which of them come first. What the table is for comes first: the verdict, the grade.
PRIORITY = ["verdict", "grade", "findings", "status", "task", "steps", "calls", "duration", "tokens", "tool_errors",
            "cost", "model", "started"]  # fmt: skip
_BY_KEY = {column.key: column for column in COLUMNS}
NARROW_EPISODE = 22  # the episode column's width when the columns do not all fit


def layout(width: int, shift: int = 0) -> list[tuple[Column, int]]:
    """The columns shown at a terminal ``width`` and their widths. When all fit, in their usual
    order, the episode column taking what the others leave; when not, the episode and then the
    others by :data:`PRIORITY` from ``shift`` on, as many as fit (the episode gets the rest)."""
    fixed = sum(column.width + 1 for column in COLUMNS[1:]) + MARK_WIDTH
    if width - fixed - 1 >= 16:
        return [(COLUMNS[0], width - fixed - 1), *((column, column.width) for column in COLUMNS[1:])]
    episode = min(NARROW_EPISODE, max(10, width // 4))
    left = width - MARK_WIDTH - episode - 1
    chosen: list[tuple[Column, int]] = []
    for key in PRIORITY[shift % len(PRIORITY):]:
        column = _BY_KEY[key]
        if column.width + 1 > left:
            break
        chosen.append((column, column.width))
        left -= column.width + 1
    return [(COLUMNS[0], episode + max(0, left)), *chosen]


def narrow(width: int) -> bool:
    return len(layout(width)) < len(COLUMNS)


def line_of(cells: dict[str, Text], columns: list[tuple[Column, int]], prefix: Text) -> Text:
    line = prefix.copy()
    for column, width in columns:
        cell = cells[column.key].copy()
        cell.no_wrap = True
        if column.key == "episode" and cell.cell_len > width:
            # both ends: a run folder's name starts with its time and ends with its task or attempt
            head = (width - 1) // 2
            cell = Text(cell.plain[:head] + "\u2026" + cell.plain[cell.cell_len - (width - 1 - head) :], style=cell.style)
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
        columns = layout(self.size.width, self.table.shift)
        cells = {}
        for column in COLUMNS:
            title = column.title
            if column.key == self.table.sort_key:
                title += " \u25bc" if self.table.descending else " \u25b2"
            cells[column.key] = Text(title, "bold")
        # the arrows' own span, not the line's style: the titles appended after it must not be muted too
        more = Text(" " * MARK_WIDTH) if len(columns) == len(COLUMNS) else Text.assemble(("\u2190\u2192", "dim"))
        return themed(line_of(cells, columns, more), self.app.theme_variables)


class FleetTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("down,j", "cursor_down", "Next episode", show=False),
        Binding("up,k", "cursor_up", "Previous episode", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home,g", "first", "First row", show=False),
        Binding("end,G", "last", "Last row", show=False),
        Binding("right", "more_columns(1)", "More columns (when they do not all fit)", show=False),
        Binding("left", "more_columns(-1)", "The columns before", show=False),
    ]
    DEFAULT_CSS = """
    FleetTable { height: 1fr; overflow-x: hidden; }
    FleetTable > .fleet--cursor { background: $block-cursor-blurred-background; color: $block-cursor-blurred-foreground; }
    FleetTable:focus > .fleet--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
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
        self.shift = 0  # which of the columns after the episode come first, when they do not all fit

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
            columns = layout(width, self.shift)
            text = line_of({column.key: column.cell(row, self.folder) for column, _ in columns}, columns, mark)
        text = themed(text, self.app.theme_variables)
        if index == self.cursor:
            text.stylize(readable(self.get_component_rich_style("fleet--cursor")))
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

    def action_more_columns(self, step: int) -> None:
        if not narrow(self.size.width):
            self.app.bell()
            return
        self.shift = max(0, min(len(PRIORITY) - 1, self.shift + step))
        self.refresh()
        self.screen.query_one(FleetHeader).refresh()

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
