"""Which bindings each screen has, for the help screen and the command palette: each screen names
its sections, so this module imports no screen."""

from __future__ import annotations

from textual.actions import parse as parse_action
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from smoldata_tui.ui.keys import KeyHelp, key_catalogue, key_display


def catalogue_for(screen: Screen) -> list[KeyHelp]:
    """Every key of ``screen``: the bindings of the classes its ``help_sections()`` names (a heading
    and the class whose BINDINGS it lists), then the app's; a binding of the screen's own that its
    ``check_action`` turns off now (playback keys without playback, the ``q`` that does not apply:
    quit_or_back.py) is left out, as the footer leaves it out."""
    sections = getattr(screen, "help_sections", None)
    groups = sections() if sections is not None else [(type(screen).__name__, type(screen))]
    entries = key_catalogue(groups) + app_entries(type(screen.app))
    return [entry for entry in entries if _applies(screen, entry)]


def _applies(screen: Screen, entry: KeyHelp) -> bool:
    if not isinstance(screen, entry.owner):
        return True
    _, name, parameters = parse_action(entry.action)
    return screen.check_action(name, parameters) is not False


def app_entries(app_class: type[App]) -> list[KeyHelp]:
    palette = Binding(App.COMMAND_PALETTE_BINDING, "command_palette", "Command palette: every action")
    quit_binding = Binding("ctrl+q", "quit", "Quit the app")
    return [
        KeyHelp("Everywhere", key_display(binding.key), binding.description, binding.action, app_class)
        for binding in (palette, quit_binding)
    ]
