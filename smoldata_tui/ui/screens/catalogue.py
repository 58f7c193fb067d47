"""Which bindings each screen has, for the help screen and the command palette."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from smoldata_tui.ui.keys import KeyHelp, key_catalogue, key_display


def catalogue_for(screen: Screen) -> list[KeyHelp]:
    from smoldata_tui.ui.screens.episode import EpisodeScreen
    from smoldata_tui.ui.screens.filter import FilterScreen
    from smoldata_tui.ui.screens.fleet import FleetScreen
    from smoldata_tui.ui.screens.fleet_table import FleetTable
    from smoldata_tui.ui.widgets.conversation import ConversationView
    from smoldata_tui.ui.widgets.detail import DetailView
    from smoldata_tui.ui.widgets.find_bar import FindBar
    from smoldata_tui.ui.widgets.findings_panel import FindingsList
    from smoldata_tui.ui.widgets.timeline import Timeline
    from smoldata_tui.ui.widgets.training_panel import TurnTable

    from smoldata_tui.ui.screens.group import GroupScreen
    from smoldata_tui.ui.screens.groups import GroupsScreen

    if isinstance(screen, FleetScreen):
        groups = [("Fleet table", FleetScreen), ("Rows", FleetTable)]
    elif isinstance(screen, (GroupsScreen, GroupScreen)):
        groups = [("Attempt groups", GroupsScreen), ("One group", GroupScreen)]
    else:
        groups = [
            ("Timeline", Timeline),
            ("Episode", EpisodeScreen),
            ("Detail pane", DetailView),
            ("Findings list", FindingsList),
            ("Conversation", ConversationView),
            ("Training tab", TurnTable),
            ("Find bar", FindBar),
            ("Filter dialog", FilterScreen),
        ]
    entries = key_catalogue(groups)
    entries += app_entries(type(screen.app))
    if isinstance(screen, EpisodeScreen) and screen.speed is None:  # no --speed: no playback keys
        entries = [entry for entry in entries if not entry.action.startswith("playback_")]
    return entries


def app_entries(app_class: type[App]) -> list[KeyHelp]:
    palette = Binding(App.COMMAND_PALETTE_BINDING, "command_palette", "Command palette: every action")
    quit_binding = Binding("ctrl+q", "quit", "Quit the app")
    return [
        KeyHelp("Everywhere", key_display(binding.key), binding.description, binding.action, app_class)
        for binding in (palette, quit_binding)
    ]
