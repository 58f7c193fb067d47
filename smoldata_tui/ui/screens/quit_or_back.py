"""``q`` on a screen that is the whole app in one place (``q`` quits) and opened over another in
another (``q`` goes back to it): two bindings of ``q``, and ``check_action`` keeps only the one
that says what ``q`` does on this screen, so the footer, ``?`` and Ctrl+P name it truthfully.
The screen's ``action_leave`` does the leaving; the binding's argument only picks the label."""

from __future__ import annotations

from textual.binding import Binding

QUIT_OR_BACK = [Binding("q", "leave('quit')", "Quit"), Binding("q", "leave('back')", "Back")]


class QuitOrBack:  # mixed into a Screen (first, so its check_action is asked first)
    def q_quits(self) -> bool:
        """Whether ``q`` leaves the app here (rather than going back to the screen below)."""
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave" and parameters:
            return (parameters[0] == "quit") == self.q_quits()
        return super().check_action(action, parameters)  # type: ignore[misc]
