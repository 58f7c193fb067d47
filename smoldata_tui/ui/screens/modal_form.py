"""A dialog of fields with a start button and Back: Enter in a field or the start button starts,
Back or Esc closes, ``?`` lists the keys. The launch form and the fork form are both one."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input

from smoldata_tui.ui.screens.help import HelpScreen


class ModalForm(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss_form", "Back"),
        # In a text field ? is typed (a base URL may hold a query string), so F1 too, from anywhere.
        Binding("question_mark", "help", "Keys (outside a text field)"),
        Binding("f1", "help", "Keys, from a text field too", priority=True),
    ]
    START_BUTTON = "start"  # the id of the button that starts

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == self.START_BUTTON:
            self.action_start()
        else:
            self.dismiss(None)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_start()

    def action_dismiss_form(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Form", ModalForm), ("Fields", Screen)]

    def action_start(self) -> None:
        raise NotImplementedError
