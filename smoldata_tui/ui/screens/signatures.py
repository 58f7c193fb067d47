"""The fleet's failure taxonomy without a model: every episode's signature (its error and warning
finding kinds, how it ended, its last tool, its grade bucket: ``EpisodeSummary.signature``) with
how many episodes share it, most common first. Enter opens an exemplar (the first episode of
that signature in the table's order); ``f`` shows only that signature's episodes in the table."""

from __future__ import annotations

from collections import Counter

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable

from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.theme_text import ThemedStatic


def signature_counts(summaries: list[EpisodeSummary]) -> list[tuple[str, int, EpisodeSummary]]:
    """(signature, episodes, exemplar) most common first; the exemplar is the first in ``summaries``."""
    counts: Counter[str] = Counter()
    exemplars: dict[str, EpisodeSummary] = {}
    for summary in summaries:
        counts[summary.signature] += 1
        exemplars.setdefault(summary.signature, summary)
    return [(signature, count, exemplars[signature])
            for signature, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]  # fmt: skip


class SignaturesScreen(ModalScreen[tuple[str, str] | None]):
    """Dismissed with ("open", path), ("filter", signature) or None."""

    BINDINGS = [
        Binding("enter", "open", "Open an exemplar (the first episode of this signature)"),
        Binding("f", "filter", "Only this signature in the table"),
        Binding("question_mark", "help", "Keys"),
        Binding("escape,q", "close", "Close"),
    ]
    DEFAULT_CSS = """
    SignaturesScreen { align: center middle; }
    SignaturesScreen > Vertical {
        width: 110; max-width: 100%; height: 80%; border: round $primary; background: $surface; padding: 0 1;
    }
    SignaturesScreen #signatures-title { height: auto; }
    SignaturesScreen DataTable { height: 1fr; }
    """

    def __init__(self, summaries: list[EpisodeSummary]) -> None:
        super().__init__()
        self.rows = signature_counts(summaries)

    def compose(self) -> ComposeResult:
        with Vertical():
            title = Text(f"{len(self.rows)} signature(s)", "bold")
            title.append("  finding kinds · how it ended · last tool · grade   "
                         "Enter: an exemplar · f: filter · ?: keys · Esc", "dim")  # fmt: skip
            yield ThemedStatic(title, id="signatures-title")
            yield DataTable(id="signatures-table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("episodes", "signature")
        for signature, count, _ in self.rows:
            table.add_row(Text(f"{count:,}", justify="right"), Text(neutralize(clip(signature, 200))))
        table.focus()

    def _current(self) -> tuple[str, int, EpisodeSummary] | None:
        table = self.query_one(DataTable)
        return self.rows[table.cursor_row] if self.rows else None

    @on(DataTable.RowSelected)
    def action_open(self) -> None:
        row = self._current()
        if row is not None:
            self.dismiss(("open", row[2].path))

    def action_filter(self) -> None:
        row = self._current()
        if row is not None:
            self.dismiss(("filter", row[0]))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Signatures", SignaturesScreen)]
