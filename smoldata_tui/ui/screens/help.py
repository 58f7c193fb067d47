"""``?``: every key of the app, generated from the bindings themselves."""

from __future__ import annotations

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from smoldata_tui.ui.keys import KeyHelp
from smoldata_tui.ui.screens.catalogue import catalogue_for
from smoldata_tui.ui.theme_text import ThemedStatic, resolve_style


def help_table(entries: list[KeyHelp], muted: Style | str = "dim") -> Table:
    table = Table(box=None, show_header=True, header_style="bold", expand=True, padding=(0, 1))
    table.add_column("where", style=muted, no_wrap=True)
    table.add_column("keys", style="bold", no_wrap=True)
    table.add_column("what it does")
    context = None
    for entry in entries:
        shown = entry.context if entry.context != context else ""
        if shown and context is not None:
            table.add_row("", "", "")
        context = entry.context
        table.add_row(Text(shown), Text(entry.keys), Text(entry.description))
    return table


class HelpTable(Static):
    """The table in the current theme's muted colour (Rich's dim reads at 2:1 on light themes)."""

    def __init__(self, entries: list[KeyHelp], **kwargs) -> None:
        super().__init__(**kwargs)
        self.entries = entries

    def render(self) -> Table:
        return help_table(self.entries, resolve_style("dim", self.app.theme_variables))


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close the help")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 100; max-width: 100%; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    HelpScreen #help-title { height: auto; margin-bottom: 1; }
    """

    def __init__(self, parent_screen: Screen) -> None:
        super().__init__()
        self.entries = catalogue_for(parent_screen)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            title = Text("Keys", "bold")
            title.append(
                "   (Esc closes · Ctrl+P: every action, searchable · the mouse selects rows and scrolls)", "dim"
            )
            yield ThemedStatic(title, id="help-title")
            yield HelpTable(self.entries, id="help-table")

    def action_close(self) -> None:
        self.dismiss(None)
