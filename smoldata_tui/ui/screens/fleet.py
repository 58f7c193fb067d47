"""The fleet table (``replay DIR``, and the home screen's saved episodes): one row per episode.

Rows stream in as the index analyses them (on every CPU, cached: see ``fleet/``), new episodes
appear while the table is open, and the header holds the fleet's totals. Sort by any column,
filter, group by task; Enter opens the episode viewer and Esc comes back to the same row.
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

from smoldata_tui.fleet.aggregate import fleet_totals
from smoldata_tui.fleet.index import FleetIndex, RefreshResult, watch
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.screens.fleet_commands import fleet_palette_extras
from smoldata_tui.ui.screens.palette import ScreenCommands
from smoldata_tui.ui.screens.quit_or_back import QUIT_OR_BACK, QuitOrBack
from smoldata_tui.ui.screens.fleet_table import FleetHeader, FleetTable
from smoldata_tui.ui.screens.fleet_view import COLUMN_KEYS, COLUMNS, NO_FILTER, FleetFilter, header_lines, view_rows
from smoldata_tui.ui.theme_text import ThemedStatic

REDRAW_SECONDS = 0.05  # how often arrived rows are looked for
MARK_TWO = "mark two episodes with space, then d compares them"


class FleetScreen(QuitOrBack, Screen[None]):
    COMMANDS = {ScreenCommands}
    BINDINGS = [  # ? and q first: the footer keeps them at 80 columns
        Binding("question_mark", "help", "Keys"),
        *QUIT_OR_BACK,
        Binding("enter", "open", "Open the episode"),
        Binding("slash", "find", "Filter by text"),
        Binding("escape", "clear_or_back", "Clear the filter (or back)"),
        Binding("s", "sort_next", "Sort by the next column"),
        Binding("S", "sort_reverse", "Reverse the sort", show=False),
        Binding("x", "toggle_filter('rejected')", "Only rejected", show=False),
        Binding("c", "toggle_filter('crashed')", "Only wrapper crashes and unreadable", show=False),
        Binding("0", "toggle_filter('grade_zero')", "Only grade 0", show=False),
        Binding("t", "filter_task", "Only this row's task", show=False),
        Binding("u", "clear_filters", "Clear every filter", show=False),
        Binding("b", "group", "Group by task"),
        Binding("a", "attempt_groups", "Attempt groups: what GRPO learns"),
        Binding("i", "signatures", "Signatures: episodes by kind of failure", show=False),
        Binding("space", "mark", "Mark for diff", show=False),
        Binding("d", "diff", "Diff the two marked episodes"),
    ]
    DEFAULT_CSS = """
    FleetScreen > #fleet-title { height: 1; padding: 0 1; background: $panel; }
    FleetScreen > #fleet-totals { height: 2; padding: 0 1; }
    FleetScreen > #fleet-filter { height: 3; display: none; }
    FleetScreen > #fleet-filter.shown { display: block; }
    FleetScreen > #fleet-status { height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self, folder: Path, *, follow: bool = False, speed: float | None = None,
                 standalone: bool = True, cache_dir: Path | None = None) -> None:  # fmt: skip
        super().__init__()
        self.folder = Path(folder)
        self.follow, self.speed = follow, speed
        self.standalone = standalone  # the app's first screen: q quits; else q goes back
        self.index = FleetIndex(self.folder, cache_dir=cache_dir)
        self.summaries: dict[str, EpisodeSummary] = {}
        self.fleet_filter = NO_FILTER
        self.grouped = False
        self.dirty = False
        self.refreshes = 0
        self.last_refresh: RefreshResult | None = None
        self._incoming: deque[list[EpisodeSummary] | RefreshResult] = deque()
        self._redrawn_at = 0.0
        self.failure: str | None = None  # why indexing stopped, if it did
        self._redraw_cost = 0.0

    @property
    def table(self) -> FleetTable:
        return self.query_one(FleetTable)

    def compose(self) -> ComposeResult:
        folder = clip(str(self.folder), 120)
        title = Text(f" episodes in {folder}", "bold")
        title.append("   Enter opens · / filters · s sorts · b groups by task · a attempt groups · ? keys", "dim")
        yield ThemedStatic(title, id="fleet-title")
        yield ThemedStatic(id="fleet-totals")
        yield Input(placeholder="filter: words to find in the episode, task, model, status, verdict, findings",
                    id="fleet-filter")  # fmt: skip
        table = FleetTable(self.index.folder, id="fleet-table")
        yield FleetHeader(table)
        yield table
        yield ThemedStatic(id="fleet-status")
        yield Footer()

    def on_mount(self) -> None:
        self.table.focus()
        self._show_totals()
        self._status()
        self.set_interval(REDRAW_SECONDS, self._redraw_if_changed)
        self._index()

    # --- indexing (a thread; the CPU work is in worker processes) -----------------------------
    @work(thread=True, exclusive=True, group="fleet-index")
    def _index(self) -> None:
        worker = get_current_worker()

        def stopped() -> bool:
            return worker.is_cancelled

        # Handed over without waiting for the screen (call_from_thread would block on every
        # batch); the timer takes them in.
        try:
            watch(self.index, self._incoming.append, self._incoming.append, stopped=stopped)
        except Exception as exc:  # noqa: BLE001 - said on screen; the rows read so far stay
            self.app.call_from_thread(self._index_failed, f"{type(exc).__name__}: {exc}")

    def _index_failed(self, why: str) -> None:
        self.failure = clip(why, 200)
        self._status()

    def _take_incoming(self) -> None:
        refreshed = None
        while self._incoming:
            item = self._incoming.popleft()
            if isinstance(item, RefreshResult):
                if self.last_refresh is None or item.removed:
                    self.dirty = True  # the status line changes, or rows went away
                refreshed = item
                for path in item.removed:
                    self.summaries.pop(path, None)
            else:
                for summary in item:
                    self.summaries[summary.path] = summary
                self.dirty = True
        if refreshed is not None:
            self.refreshes += 1
            self.last_refresh = refreshed

    def on_unmount(self) -> None:
        self.workers.cancel_group(self, "fleet-index")

    # --- drawing --------------------------------------------------------------------------------
    def _redraw_if_changed(self) -> None:
        self._take_incoming()
        if not self.dirty:
            return
        # While rows stream in, redrawing (sort, filter, totals over every row) takes at most
        # a tenth of the time, so the screen never slows the indexing down.
        waited = time.monotonic() - self._redrawn_at
        if self.table.rows and self.last_refresh is None and waited < 10 * self._redraw_cost:
            return
        self.dirty = False
        self._redraw()

    def _redraw(self) -> None:
        started = time.monotonic()
        self._draw()
        self._redrawn_at = time.monotonic()
        self._redraw_cost = self._redrawn_at - started

    def _draw(self) -> None:
        table = self.table
        current = table.current
        keep = current.path if isinstance(current, EpisodeSummary) else None
        rows = view_rows(list(self.summaries.values()), self.index.folder, sort_key=table.sort_key,
                         descending=table.descending, fleet_filter=self.fleet_filter, grouped=self.grouped)  # fmt: skip
        table.set_rows(rows, keep=keep)
        self.query_one(FleetHeader).refresh()
        self._show_totals()
        self._status()

    def _show_totals(self) -> None:
        totals = fleet_totals(self.summaries.values())
        shown = sum(1 for row in self.table.rows if isinstance(row, EpisodeSummary))
        lines = header_lines(totals, shown=shown, width=max(20, self.size.width - 2))
        self.query_one("#fleet-totals", Static).update(Text("\n").join(lines))

    def _status(self) -> None:
        parts: list[Text] = []
        result = self.last_refresh
        if self.failure is not None:
            parts.append(Text(f"indexing stopped: {self.failure}", "bold $error"))
        elif result is None:
            parts.append(Text(f"indexing\u2026 {len(self.summaries):,} episodes read so far", "italic"))
        elif not self.summaries:
            parts.append(Text("no *.jsonl episodes in this folder (watching for new ones)"))
        else:
            parts.append(Text(f"{len(self.summaries):,} episodes · watching for new ones"))
        if self.fleet_filter != NO_FILTER:
            parts.append(Text(f"filter: {self.fleet_filter.describe()}", "bold"))
        if self.table.marked:
            parts.append(Text(f"marked {len(self.table.marked)}", "$accent"))
        row = self.table.current
        if isinstance(row, EpisodeSummary) and (row.error or row.meta_error):
            problem = row.error or row.meta_error
            parts.append(Text(clip(problem, 200), "bold $error"))
        self.query_one("#fleet-status", Static).update(Text(" · ").join(parts))

    def on_resize(self) -> None:
        self._show_totals()

    # --- actions --------------------------------------------------------------------------------
    @on(FleetTable.CursorMoved)
    def _cursor_moved(self) -> None:
        self._status()

    @on(FleetTable.Opened)
    def _opened(self, event: FleetTable.Opened) -> None:
        self._open(event.summary)

    def action_open(self) -> None:
        row = self.table.current
        if isinstance(row, EpisodeSummary):
            self._open(row)
        else:
            self.app.bell()

    def _open(self, summary: EpisodeSummary) -> None:
        if summary.error is not None:
            self.app.notify(clip(summary.error, 200), severity="error", markup=False)
            return
        self.app.open_episode(Path(summary.path), follow=self.follow, speed=self.speed, from_picker=True)

    def on_screen_resume(self) -> None:
        self.table.focus()
        self._status()

    def action_find(self) -> None:
        search = self.query_one("#fleet-filter", Input)
        search.add_class("shown")
        search.focus()

    @on(Input.Changed, "#fleet-filter")
    def _text_changed(self, event: Input.Changed) -> None:
        self.set_filter(FleetFilter(**{**self.fleet_filter.__dict__, "text": event.value.strip()}))

    @on(Input.Submitted, "#fleet-filter")
    def _text_done(self) -> None:
        self.table.focus()

    def set_filter(self, fleet_filter: FleetFilter) -> None:
        self.fleet_filter = fleet_filter
        self._redraw()

    def action_toggle_filter(self, name: str) -> None:
        self.set_filter(self.fleet_filter.toggled(name))

    def action_filter_task(self) -> None:
        row = self.table.current
        task = getattr(row, "task", None)
        if self.fleet_filter.task is not None:
            self.set_filter(FleetFilter(**{**self.fleet_filter.__dict__, "task": None}))
        elif task is not None:
            self.set_filter(FleetFilter(**{**self.fleet_filter.__dict__, "task": task}))
        else:
            self.app.bell()

    def filter_kind(self, kind: str | None) -> None:
        self.set_filter(FleetFilter(**{**self.fleet_filter.__dict__, "kind": kind}))

    def action_clear_filters(self) -> None:
        search = self.query_one("#fleet-filter", Input)
        with search.prevent(Input.Changed):
            search.value = ""
        search.remove_class("shown")
        self.set_filter(NO_FILTER)

    def action_clear_or_back(self) -> None:
        search = self.query_one("#fleet-filter", Input)
        if self.fleet_filter != NO_FILTER or search.has_class("shown"):
            self.action_clear_filters()
            self.table.focus()
        else:
            self.action_leave()

    def sort_by(self, key: str, *, descending: bool | None = None) -> None:
        table = self.table
        if descending is None:
            descending = not table.descending if table.sort_key == key else False
        table.sort_key, table.descending = key, descending
        self._redraw()

    def action_sort_next(self) -> None:
        key = COLUMN_KEYS[(COLUMN_KEYS.index(self.table.sort_key) + 1) % len(COLUMNS)]
        self.sort_by(key, descending=False)

    def action_sort_reverse(self) -> None:
        self.sort_by(self.table.sort_key, descending=not self.table.descending)

    def action_group(self) -> None:
        self.grouped = not self.grouped
        self._redraw()

    def action_attempt_groups(self) -> None:
        summaries = [summary for summary in self.summaries.values() if summary.error is None]
        if not summaries:
            self.app.notify("no episode has been read yet", severity="warning")
            return
        self.app.open_groups(summaries)

    def action_signatures(self) -> None:
        from smoldata_tui.ui.screens.signatures import SignaturesScreen

        shown = [row for row in self.table.rows if isinstance(row, EpisodeSummary)]
        self.app.push_screen(SignaturesScreen(shown or list(self.summaries.values())), self._signature_chosen)

    def _signature_chosen(self, choice: tuple[str, str] | None) -> None:
        if choice is None:
            return
        what, value = choice
        if what == "filter":
            self.set_filter(FleetFilter(**{**self.fleet_filter.__dict__, "signature": value}))
        elif value in self.summaries:
            self._open(self.summaries[value])

    def action_mark(self) -> None:
        row = self.table.current
        if not isinstance(row, EpisodeSummary):
            self.app.bell()
            return
        marked = self.table.marked
        if row.path in marked:
            marked.remove(row.path)
        else:
            marked.append(row.path)
            del marked[:-2]  # two at most: the newest pair
        self.table.refresh()
        self._status()
        if len(marked) == 2:
            self.app.notify("d compares them", title="two episodes marked")

    def action_diff(self) -> None:
        if len(self.table.marked) != 2:
            self.app.notify(MARK_TWO, severity="warning")
            return
        self.app.open_diff(*self.table.marked)

    def action_help(self) -> None:
        from smoldata_tui.ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    def q_quits(self) -> bool:
        return self.standalone

    def action_leave(self, _label: str = "") -> None:
        if self.standalone:
            self.app.exit()
        else:
            self.dismiss(None)

    # --- keys: the help's sections and the palette (ui/screens/catalogue.py, palette.py) ----------
    def help_sections(self) -> list[tuple[str, type]]:
        return [("Fleet table", FleetScreen), ("Rows", FleetTable)]

    def palette_targets(self) -> dict[type, object]:
        return {FleetScreen: self, FleetTable: self.table}

    def palette_extras(self) -> list:
        return fleet_palette_extras(self)
