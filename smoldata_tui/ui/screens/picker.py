"""The trace picker (``replay DIR``): every trace of a folder with its verdict; type to filter."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from smoldata_tui.session.metadata import EpisodeMetadata, is_trace_name, load_metadata, metadata_path_for, parse_time
from smoldata_tui.trace import Severity, Verdict, analyze_path
from smoldata_tui.trace.text import clip, neutralize

# Each column says one thing: the wrapper's verdict (accepted, or why not), counts, the grader's reward.
COLUMNS = ("trace", "task", "training wrapper", "steps", "tool calls", "findings", "grade", "started")
MAX_TRACES = 5000  # a folder with more is not a folder of episodes; say so instead of hanging


@dataclass
class TraceRow:
    """What the picker knows about one trace (``verdict`` is None until it has been read)."""

    path: Path
    name: str
    date: str
    metadata: EpisodeMetadata | None = None
    verdict: Verdict | None = None
    steps: int = 0
    calls: int = 0
    counts: dict[Severity, int] | None = None
    error: str | None = None

    @property
    def search_text(self) -> str:
        parts = [self.name, self.date]
        if self.metadata is not None:
            parts += [self.metadata.task or "", self.metadata.model or "", self.metadata.status or ""]
        if self.verdict is not None:
            parts.append(self.verdict.badge())
        return " ".join(parts).lower()


def find_traces(folder: Path) -> list[Path]:
    """``*.jsonl`` files under ``folder`` (recursively), sorted by path."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        found += [Path(root) / name for name in sorted(files) if is_trace_name(name)]
        if len(found) > MAX_TRACES:
            break
    return found


def _date(path: Path, metadata: EpisodeMetadata | None) -> str:
    moment = parse_time(metadata.started_at) if metadata is not None else None
    if moment is None:
        try:
            moment = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except OSError:
            return ""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def read_row(path: Path, folder: Path) -> TraceRow:
    """Analyse one trace (the full engine pass: the verdict is exact, not a guess)."""
    metadata = load_metadata(metadata_path_for(path))
    row = TraceRow(
        path, neutralize(str(path.relative_to(folder)), keep_newlines=False), _date(path, metadata), metadata
    )
    try:
        report, _analysis = analyze_path(path)
    except OSError as exc:
        row.error = f"unreadable: {exc.strerror or exc}"
        return row
    row.verdict = report.verdict
    row.steps = report.stats.steps
    row.calls = report.stats.calls
    row.counts = {severity: 0 for severity in Severity}
    for finding in report.findings:
        row.counts[finding.severity] += 1
    return row


def verdict_cell(row: TraceRow) -> Text:
    if row.error:
        return Text(clip(row.error, 30), "red")
    verdict = row.verdict
    if verdict is None:
        return Text("reading\u2026", "dim italic")
    if verdict.failure is None:
        return Text("\u2713 accepted", "bold green")
    exception = verdict.failure.exception
    # The reason, not only the exception's class: "Incomplete OpenCode event stream", "'callID'"
    reason = neutralize(str(exception), keep_newlines=False) or type(exception).__name__
    if verdict.failure.crashes:
        return Text(clip(f"crash: {type(exception).__name__}: {reason}", 48), "bold red")
    return Text(clip(f"None: {reason}", 48), "yellow")


def findings_cell(row: TraceRow) -> Text:
    if row.counts is None:
        return Text("")
    text = Text()
    for severity, mark, style in (
        (Severity.ERROR, "\u2717", "bold red"),
        (Severity.WARNING, "!", "yellow"),
        (Severity.INFO, "\u00b7", "dim"),
    ):
        if row.counts[severity]:
            text.append(f"{mark}{row.counts[severity]} ", style)
    return text if text.plain else Text("none", "dim")


def row_cells(row: TraceRow) -> list[Text]:
    metadata = row.metadata
    grade = metadata.grade.badge() if metadata is not None and metadata.grade is not None else ""
    done = row.verdict is not None
    return [
        Text(row.name),
        Text(neutralize(clip(metadata.task, 30), keep_newlines=False) if metadata and metadata.task else ""),
        verdict_cell(row),
        Text(f"{row.steps:,}" if done else "", justify="right"),
        Text(f"{row.calls:,}" if done else "", justify="right"),
        findings_cell(row),
        Text(grade, "cyan"),
        Text(row.date, "dim"),
    ]


class PickerScreen(Screen[None]):
    BINDINGS = [
        Binding("down", "move(1)", "Next trace", show=False),
        Binding("up", "move(-1)", "Previous trace", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
        Binding("enter", "open", "Open"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_or_quit", "Clear the filter (or quit)"),
        Binding("question_mark,f1", "help", "Keys"),
        Binding("q", "quit", "Quit"),
    ]
    DEFAULT_CSS = """
    PickerScreen > #picker-title { height: 1; padding: 0 1; background: $panel; }
    PickerScreen > Input { height: 3; margin: 0 0; }
    PickerScreen > DataTable { height: 1fr; }
    PickerScreen > #picker-status { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(self, folder: Path, *, follow: bool = False, speed: float | None = None) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.follow = follow
        self.speed = speed
        self.rows: dict[Path, TraceRow] = {}
        self.order: list[Path] = []

    def compose(self) -> ComposeResult:
        folder = neutralize(str(self.folder), keep_newlines=False)
        title = Text(f" traces in {folder}  (Enter opens, / filters, ? keys, q quits)", "bold")
        yield Static(title, id="picker-title")
        yield Input(placeholder="/ to filter (name, task, model, verdict); Enter opens, Esc clears", id="picker-filter")
        table: DataTable = DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static(id="picker-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        table.focus()  # keys act; typing goes into the filter only after /
        self._scan()

    # --- reading the folder -------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="picker-scan", exit_on_error=False)
    def _scan(self) -> None:
        worker = get_current_worker()
        paths = find_traces(self.folder)
        placeholder = [
            TraceRow(path, neutralize(str(path.relative_to(self.folder)), keep_newlines=False), "") for path in paths
        ]
        self.app.call_from_thread(self._listed, placeholder, len(paths) > MAX_TRACES)
        for path in paths[:MAX_TRACES]:
            if worker.is_cancelled:
                return
            row = read_row(path, self.folder)
            if worker.is_cancelled:
                return
            self.app.call_from_thread(self._row_read, row)
        if paths:
            self.app.call_from_thread(self._all_read, len(paths))

    def _listed(self, rows: list[TraceRow], too_many: bool) -> None:
        self.order = [row.path for row in rows]
        self.rows = {row.path: row for row in rows}
        self._refill()
        if not rows:
            self._status("no *.jsonl traces in this folder")
        elif too_many:
            self._status(f"more than {MAX_TRACES:,} traces: showing the first {MAX_TRACES:,}")
        else:
            self._status(f"reading {len(rows):,} traces\u2026")

    def _row_read(self, row: TraceRow) -> None:
        self.rows[row.path] = row
        table = self.query_one(DataTable)
        key = str(row.path)
        if key in table.rows:
            for column, cell in zip(table.columns, row_cells(row), strict=True):
                table.update_cell(key, column, cell)
        elif self._matches(row):
            self._refill()

    def _all_read(self, count: int) -> None:
        self._refill()  # once more, so the column widths fit what the cells now hold
        self._status(f"{count:,} traces")

    def _status(self, text: str) -> None:
        self.query_one("#picker-status", Static).update(Text(text))

    # --- filtering and opening ----------------------------------------------------------------
    def _matches(self, row: TraceRow) -> bool:
        words = self.query_one(Input).value.lower().split()
        text = row.search_text
        return all(word in text for word in words)

    def _refill(self) -> None:
        table = self.query_one(DataTable)
        selected = self.selected_path
        table.clear()
        for path in self.order:
            row = self.rows[path]
            if self._matches(row):
                table.add_row(*row_cells(row), key=str(path))
        if selected is not None and str(selected) in table.rows:
            table.move_cursor(row=table.get_row_index(str(selected)))

    @on(Input.Changed, "#picker-filter")
    def _filter_changed(self) -> None:
        self._refill()

    @property
    def selected_path(self) -> Path | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key((table.cursor_row, 0)).row_key
        return Path(key.value) if key.value is not None else None

    def action_move(self, delta: int) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))

    @on(Input.Submitted, "#picker-filter")
    @on(DataTable.RowSelected, "#picker-table")
    def action_open(self) -> None:
        path = self.selected_path
        if path is None:
            self.app.bell()
            return
        from smoldata_tui.ui.screens.episode import EpisodeScreen

        self.app.push_screen(EpisodeScreen(path, follow=self.follow, speed=self.speed, from_picker=True))

    def action_filter(self) -> None:
        self.query_one(Input).focus()

    def action_clear_or_quit(self) -> None:
        search = self.query_one(Input)
        if search.value:
            search.value = ""
        elif search.has_focus:
            self.query_one(DataTable).focus()
        else:
            self.app.exit()

    def action_quit(self) -> None:
        self.app.exit()

    def action_help(self) -> None:
        from smoldata_tui.ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))
