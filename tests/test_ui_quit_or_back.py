"""``q`` says what it does: "Quit" in the footer and ``?`` where it quits (the screen is the whole
app), "Back" where it goes back to the screen below (an episode or a diff opened from the fleet
or from a group, the fleet opened from home). The real apps via Pilot, on real saved episodes."""

from __future__ import annotations

import pytest

from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.diff import DiffScreen
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.fleet import FleetScreen
from smoldata_tui.ui.screens.group import GroupScreen
from smoldata_tui.ui.screens.groups import GroupsScreen
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.home import HomeScreen

from .test_diff_screen import diff_app, opened, two_episodes
from .test_groups import RIGHT, WRONG, _batch, _trace
from .test_ui_fleet import fleet_ready
from .test_ui_helpers import replay_app, screen_lines, wait_for


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):  # the fleet table's cache, not the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


async def q_says(pilot, label: str) -> None:
    """The footer and the help both give ``q`` this label, and never the other one."""
    app, screen = pilot.app, pilot.app.screen
    other = "Back" if label == "Quit" else "Quit"
    await wait_for(pilot, lambda: (lines := screen_lines(app)) and "Keys" in lines[-1], what="the footer drawn")
    footer = screen_lines(app)[-1]
    assert f"q {label}" in footer and f"q {other}" not in footer, (type(screen).__name__, footer)
    await pilot.press("question_mark")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
    words = [line.replace("\u2502", " ").split() for line in screen_lines(app)]  # (the help's border)
    pairs = {(row[i], row[i + 1]) for row in words for i in range(len(row) - 1)}
    assert ("q", label) in pairs and ("q", other) not in pairs, [row for row in words if "q" in row]
    await pilot.press("escape")
    await wait_for(pilot, lambda: app.screen is screen, what="the help closed")


async def test_from_the_fleet_q_on_an_episode_and_a_diff_says_back_and_goes_back(tmp_path):
    _batch(tmp_path / "batch", [("split-task", 0, 1.0, _trace(RIGHT)), ("split-task", 1, 0.0, _trace(WRONG))])
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=(160, 40)) as pilot:
        fleet = await fleet_ready(pilot, 2)
        await q_says(pilot, "Quit")  # `replay DIR`: the fleet is the whole app
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), what="the episode")
        await q_says(pilot, "Back")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is fleet, what="back to the fleet")
        await pilot.press("space", "down", "space", "d")
        await opened(pilot)
        await q_says(pilot, "Back")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is fleet, what="back to the fleet")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="quit")


async def test_from_a_group_q_on_an_attempt_and_a_diff_says_back(tmp_path):
    _batch(tmp_path / "batch", [("split-task", 0, 1.0, _trace(RIGHT)), ("split-task", 1, 0.0, _trace(WRONG))])
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=(160, 40)) as pilot:
        await fleet_ready(pilot, 2)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen), what="the groups")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.screen.calls is not None,
                       what="the group")  # fmt: skip
        group = app.screen
        await pilot.press("d")
        await opened(pilot)
        await q_says(pilot, "Back")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is group, what="back to the group")
        group.action_open()  # (Enter on the attempts list; which list has the focus is not the point here)
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), what="an attempt")
        await q_says(pilot, "Back")
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is group, what="back to the group")


async def test_a_standalone_episode_or_diff_says_quit(tmp_path):
    a, b = two_episodes(tmp_path)
    app = replay_app(a / "run.jsonl")
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), what="the episode")
        await q_says(pilot, "Quit")
    app = diff_app(a / "run.jsonl", b / "run.jsonl")
    async with app.run_test(size=(160, 40)) as pilot:
        await opened(pilot)
        await q_says(pilot, "Quit")


async def test_the_fleet_opened_from_home_says_back(tmp_path):
    _batch(tmp_path / "runs" / "batch", [("split-task", 0, 1.0, _trace(RIGHT))])
    app = LiveApp(runs=tmp_path / "runs")
    app.animation_level = "none"
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
        await pilot.press("e")
        await fleet_ready(pilot, 1)
        assert isinstance(app.screen, FleetScreen)
        await q_says(pilot, "Back")
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="back home")
