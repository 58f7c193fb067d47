"""A dialog of fields with a start button and Back: Enter in a field or the start button starts,
Back or Esc closes. The launch form and the fork form are both one."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Button, Input


class ModalForm(ModalScreen[None]):
    BINDINGS = [Binding("escape", "dismiss_form", "Back")]
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

    def action_start(self) -> None:
        raise NotImplementedError
