"""The question asked before anything running is stopped (an episode, a batch, a hung tool call):
y stops it, n or Esc keeps it running."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button

from smoldata_tui.ui.theme_text import ThemedStatic


class ConfirmCancel(ModalScreen[bool]):
    YES_VARIANT = "error"  # stopping something running: the red button
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]
    # Its own CSS: rules for it in another screen's DEFAULT_CSS are scoped to that screen's
    # descendants, which a dialog pushed over it is not, and did not apply.
    DEFAULT_CSS = """
    ConfirmCancel { align: center middle; }
    ConfirmCancel #confirm { width: 70; max-width: 100%; height: auto; padding: 1 2; border: thick $error;
                             background: $surface; }
    ConfirmCancel Horizontal { height: auto; margin-top: 1; }
    """

    def __init__(self, question: str = "Cancel the episode? The agent is stopped, what it wrote is kept, the sandbox "
                 "released.", *, yes: str = "Cancel the episode (y)", no: str = "Keep running (n)") -> None:  # fmt: skip
        super().__init__()
        self.question, self.yes_label, self.no_label = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield ThemedStatic(Text(self.question))
            with Horizontal():
                yield Button(self.yes_label, id="yes", variant=self.YES_VARIANT)
                yield Button(self.no_label, id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def ask_then(app, question: ConfirmCancel, on_yes) -> None:
    """Ask before cancelling; the cancel key pressed again while asked means yes."""
    if isinstance(app.screen, ConfirmCancel):
        app.screen.dismiss(True)
        return
    app.push_screen(question, lambda yes: on_yes() if yes else None)
