"""The diff screen: two episodes' calls aligned side by side, the first divergence focused.

``DiffScreen(a_path, b_path)`` can be pushed onto any app (the fleet table does, for two marked
rows): it reads both episodes in a thread, then shows a header with each side's verdict, grade,
calls, tokens and duration and the deltas, the aligned pairs, and the selected pair's unified
diff of input and output. ``]`` / ``[`` walk the differences; Esc or ``q`` goes back (or quits
when the diff is the whole app).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Static

from smoldata_tui.diff import DiffInputError, EpisodeDiff, diff_paths, side_facts
from smoldata_tui.diff.calls import CallReader
from smoldata_tui.diff.detail import pair_detail
from smoldata_tui.trace.text import neutralize
from smoldata_tui.ui.screens.diff_view import detail_blocks, header_lines
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.palette import ScreenCommands
from smoldata_tui.ui.screens.quit_or_back import QUIT_OR_BACK, QuitOrBack
from smoldata_tui.ui.theme_text import ThemedStatic
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.diff_table import DiffTable


class DiffDetailView(DetailView):
    """The detail pane, with colours for added and removed lines."""

    COMPONENT_CLASSES = DetailView.COMPONENT_CLASSES | {"detail--added", "detail--removed"}
    DEFAULT_CSS = """
    DiffDetailView > .detail--added { color: $text-success; }
    DiffDetailView > .detail--removed { color: $text-error; }
    """


class DiffScreen(QuitOrBack, Screen[None]):
    COMMANDS = {ScreenCommands}
    BINDINGS = [
        Binding("right_square_bracket", "next_difference", "Next difference"),
        Binding("left_square_bracket", "previous_difference", "Previous difference"),
        Binding("f", "first_difference", "First divergence", show=False),
        Binding("tab", "switch_focus", "Pairs / detail", show=False),
        Binding("question_mark", "help", "Keys"),
        Binding("escape", "back", "Back", show=False),
        *QUIT_OR_BACK,
    ]
    DEFAULT_CSS = """
    DiffScreen #diff-header {
        height: auto; max-height: 3; background: $panel; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    DiffScreen #diff-columns { height: 1; background: $panel; color: $text-muted; }
    DiffScreen #diff-table { height: 1fr; min-height: 4; }
    DiffScreen #diff-detail { height: 45%; min-height: 5; border-top: hkey $foreground 20%; }
    """

    def __init__(self, a_path: str | Path, b_path: str | Path, *, standalone: bool = False) -> None:
        """``standalone``: the diff is the whole app, so leaving it quits."""
        super().__init__()
        self.a_path, self.b_path = str(a_path), str(b_path)
        self.standalone = standalone
        self.diff: EpisodeDiff | None = None
        self.error: str | None = None
        self._readers: tuple[CallReader, CallReader] | None = None

    def compose(self) -> ComposeResult:
        yield ThemedStatic(Text(f"comparing {self.a_path} with {self.b_path}…"), id="diff-header")
        yield ThemedStatic(id="diff-columns")
        yield DiffTable(id="diff-table")
        yield DiffDetailView(id="diff-detail")
        yield Footer()

    @property
    def table(self) -> DiffTable:
        return self.query_one(DiffTable)

    def on_mount(self) -> None:
        self.table.focus()
        self._load()

    def on_unmount(self) -> None:
        if self._readers is not None:
            for reader in self._readers:
                reader.close()

    @work(thread=True, exclusive=True, group="diff-load")
    def _load(self) -> None:
        try:
            diff = diff_paths(self.a_path, self.b_path)
        except DiffInputError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - shown on the screen, never a crash of the app
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._loaded, diff)

    def _failed(self, message: str) -> None:
        self.error = message
        self.query_one("#diff-header", Static).update(Text(f"Cannot compare: {neutralize(message)}", "bold $error"))
        self.notify(neutralize(message, keep_newlines=False), title="diff", severity="error", markup=False)

    def _loaded(self, diff: EpisodeDiff) -> None:
        self.diff = diff
        self._readers = (CallReader(diff.a.path), CallReader(diff.b.path))
        self.query_one("#diff-header", Static).update(header_lines(diff, side_facts(diff.a), side_facts(diff.b)))
        self._label_columns()
        table = self.table
        table.set_diff(diff)
        first = diff.first_divergence
        if not diff.pairs:
            self.query_one(DiffDetailView).set_blocks([("muted", ["Neither episode has a tool call."])])
        table.move_to(first if first is not None else 0, center=True)
        self.show_detail(table.cursor)

    def _label_columns(self) -> None:
        width = self.table.scrollable_content_region.width or self.size.width
        half = max(0, (width - 5) // 2)
        left = f"{'A line':>6} tool   {Path(self.a_path).name}"
        right = f"{'B line':>6} tool   {Path(self.b_path).name}"
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(neutralize(left, keep_newlines=False)[:half].ljust(half))
        text.append("  op \u2502")
        text.append(neutralize(right, keep_newlines=False))
        self.query_one("#diff-columns", Static).update(text)

    def on_resize(self) -> None:
        if self.diff is not None:
            self._label_columns()

    @on(DiffTable.Moved)
    def _moved(self, message: DiffTable.Moved) -> None:
        self.show_detail(message.row)

    def show_detail(self, row: int) -> None:
        if self.diff is None or self._readers is None or not (0 <= row < len(self.diff.pairs)):
            return
        detail = pair_detail(self.diff, self.diff.pairs[row], self._readers)
        self.query_one(DiffDetailView).set_blocks(detail_blocks(detail))

    # --- moving between differences -----------------------------------------------------------
    def _walk(self, backwards: bool) -> None:
        if self.diff is None:
            return
        current = self.table.cursor
        rows = self.diff.divergences()
        candidates = [row for row in rows if row < current] if backwards else [row for row in rows if row > current]
        if not candidates:
            self.notify("No more differences this way." if rows else "The two episodes make the same calls.",
                        timeout=3, markup=False)  # fmt: skip
            self.app.bell()
            return
        self.table.move_to(candidates[-1] if backwards else candidates[0], center=True)

    def action_next_difference(self) -> None:
        self._walk(backwards=False)

    def action_previous_difference(self) -> None:
        self._walk(backwards=True)

    def action_first_difference(self) -> None:
        if self.diff is not None and self.diff.first_divergence is not None:
            self.table.move_to(self.diff.first_divergence, center=True)

    def action_switch_focus(self) -> None:
        detail = self.query_one(DiffDetailView)
        (self.table if detail.has_focus else detail).focus()

    # --- help, back, quit ---------------------------------------------------------------------
    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Pairs", DiffTable), ("Diff", DiffScreen), ("Detail pane", DetailView)]

    def palette_targets(self) -> dict[type, object]:
        return {DiffScreen: self, DiffTable: self.table, DetailView: self.query_one(DiffDetailView)}

    def action_back(self) -> None:
        if not self.table.has_focus:
            self.table.focus()
        elif not self.standalone:
            self.dismiss(None)

    def q_quits(self) -> bool:
        return self.standalone

    def action_leave(self, _label: str = "") -> None:
        if self.standalone:
            self.app.exit()
        else:
            self.dismiss(None)
