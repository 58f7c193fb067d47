"""``?`` lists every key (from the bindings themselves) and Ctrl+P holds every action."""

from __future__ import annotations

from textual.binding import Binding
from textual.command import CommandPalette

from smoldata_tui.ui.keys import bindings_of, key_display
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.palette import ScreenCommands
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.find_bar import FindBar
from smoldata_tui.ui.widgets.findings_panel import FindingsList
from smoldata_tui.ui.widgets.timeline import Timeline
from smoldata_tui.ui.widgets.training_panel import TurnTable

from .conftest import SAMPLES
from .test_ui_helpers import SIZE, loaded, replay_app, screen_lines, wait_for

EPISODE_KEYS = [Timeline, EpisodeScreen, DetailView, FindingsList, FindBar, TurnTable]


def test_key_names_are_shown_the_way_people_type_them():
    assert key_display("question_mark") == "?"
    assert key_display("ctrl+f") == "Ctrl+F"
    assert key_display("pagedown") == "PgDn"
    assert key_display("G") == "G"
    assert key_display("left_square_bracket") == "["


def test_every_binding_has_a_description():
    for owner in EPISODE_KEYS:
        for binding in bindings_of(owner):
            assert isinstance(binding, Binding) and binding.description, (owner.__name__, binding.key)


async def test_help_lists_every_key_of_the_episode_screen():
    app = replay_app(SAMPLES / "clean_pass.jsonl")
    async with app.run_test(notifications=True, size=(120, 80)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = "\n".join(screen_lines(app))
        for owner in EPISODE_KEYS:
            for binding in bindings_of(owner):
                if binding.action.startswith("playback_"):
                    assert binding.description not in shown  # not a playback session
                    continue
                if binding.action == "leave('back')":  # the whole app: q quits (test_ui_quit_or_back.py)
                    continue
                keys = " ".join(key_display(key) for key in binding.key.split(","))
                assert binding.description in shown, binding.description
                assert any(keys in line and binding.description in line for line in shown.splitlines()), keys
        assert "Ctrl+P" in shown
        await pilot.press("escape")
        assert isinstance(app.screen, EpisodeScreen)


async def test_palette_holds_every_action_and_runs_them():
    app = replay_app(SAMPLES / "tool_errors.jsonl")
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        provider = ScreenCommands(screen)
        titles = {title for title, _help, _run in provider._commands()}
        for owner in (Timeline, EpisodeScreen, DetailView, FindingsList, TurnTable):
            for binding in bindings_of(owner):
                if not binding.action.startswith("playback_") and binding.action != "leave('back')":
                    assert binding.description in titles, binding.description
        assert "Filter: only bash calls" in titles
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"rows with findings")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.model.filter.findings_only, what="the filter from the palette")
        assert screen.model.row_count == 2
