"""``?`` on the dialogs lists their keys, as on every other screen: the signatures (``i`` in the
fleet table), the launch form (Enter on home) and the fork form (``F`` on a timeline row). In a
form's text field ``?`` is typed (a base URL may hold a query string) and F1 opens the help. The
real apps via Pilot, on real traces."""

from __future__ import annotations

import shutil

import pytest
from textual.widgets import Input

from smoldata_tui.fleet.build import write_fleet
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.apps.viewer import ReplayApp
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.fleet import FleetScreen
from smoldata_tui.ui.screens.fork_launch import ConfirmFork, ForkForm
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm
from smoldata_tui.ui.screens.signatures import SignaturesScreen

from .test_fork import PARENT
from .test_ui_live import wait_for


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):  # the fleet table's cache, not the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def shown_lines(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def assert_help_lists(app, keys_and_what: list[tuple[str, str]]) -> None:
    assert isinstance(app.screen, HelpScreen)
    lines = shown_lines(app)
    for keys, what in keys_and_what:
        assert any(f" {keys} " in line and what in line for line in lines), (keys, what, "\n".join(lines))


async def close_help(pilot, back_to: type) -> None:
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, back_to), 5)


async def test_question_mark_lists_the_signatures_keys(tmp_path):
    write_fleet(tmp_path / "fleet", 6, seed=3)
    app = ReplayApp(tmp_path / "fleet")
    app.animation_level = "none"
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen) and len(app.screen.table.rows) == 6, 60)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SignaturesScreen), 5)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        assert_help_lists(app, [("Enter", "Open an exemplar"), ("f", "Only this signature"), ("?", "Keys"),
                                ("Esc q", "Close")])  # fmt: skip
        await close_help(pilot, SignaturesScreen)


async def test_question_mark_lists_the_launch_forms_keys_and_is_typed_in_a_field(tmp_path):
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        assert not isinstance(app.focused, Input)  # the fields' scroll area, as the form opens
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        assert_help_lists(app, [("Esc", "Back"), ("?", "Keys (outside a text field)"),
                                ("F1", "Keys, from a text field too"), ("Tab", "Focus Next")])  # fmt: skip
        await close_help(pilot, LaunchForm)
        url = app.screen.query_one("#base-url", Input)
        url.focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, LaunchForm) and url.value == "?"
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        await close_help(pilot, LaunchForm)


async def test_question_mark_and_f1_list_the_fork_forms_keys(tmp_path):
    parent = tmp_path / "parent"
    parent.mkdir()
    shutil.copy(PARENT, parent / "run.jsonl")
    shutil.copy(PARENT.with_name("passing_run.meta.json"), parent / "run.meta.json")
    app = ReplayApp(parent / "run.jsonl")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen) and app.screen.model.count > 10, 10)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmFork), 5)
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkForm), 5)
        assert isinstance(app.focused, Input)  # the model field, where ? is text
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        assert_help_lists(app, [("Esc", "Back"), ("?", "Keys (outside a text field)"),
                                ("F1", "Keys, from a text field too")])  # fmt: skip
        await close_help(pilot, ForkForm)
        app.screen.query_one("#fork").focus()
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        await close_help(pilot, ForkForm)

