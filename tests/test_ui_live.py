"""The live episode screen, driven by Pilot, with a real episode: the stand-in OpenCode (these tests
are about our screens, not OpenCode) in a real bubblewrap sandbox, answered by the replay model."""

from __future__ import annotations

import asyncio
import os

from textual.color import Color

from smoldata_tui.session.episode import EpisodeSpec, stages_for
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.live import ConfirmCancel, LiveScreen

from .conftest import SAMPLES
from .test_episode_local import _sleeping_recording, processes_matching, sandbox_dirs
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture


def spec_for(recording, save_dir, timeout=300) -> EpisodeSpec:
    return EpisodeSpec(
        task=load_task(default_task_root() / "sales-top-region"),
        endpoint=open_endpoint(model=f"replay:{recording}"),
        timeout_s=timeout,
        save_dir=save_dir,
    )


async def wait_for(pilot, condition, seconds: float) -> None:
    for _ in range(int(seconds * 10)):
        if condition():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out waiting; {stage_log(pilot.app)}")


def stage_log(app) -> str:
    """The last lines of a live screen's stage log: where an episode that never got on had got to."""
    for screen in app.screen_stack:
        if isinstance(screen, LiveScreen):
            try:
                return "the stage log ends:\n" + "\n".join(screen.query_one("#stage-log").lines[-20:])
            except Exception as exc:  # noqa: BLE001 - a diagnostic for a failure already being reported
                return f"no stage log ({type(exc).__name__})"
    return "no live screen"


async def back_to_stages(pilot, app) -> None:
    """Esc steps back one level at a time (focus, search, then the timeline itself)."""
    for _ in range(4):
        if isinstance(app.screen, LiveScreen):
            return
        await pilot.press("escape")
        await pilot.pause(0.2)
    assert isinstance(app.screen, LiveScreen)


def live_screen(app) -> LiveScreen:
    return next(screen for screen in app.screen_stack if isinstance(screen, LiveScreen))


async def test_a_live_episode_shows_stages_then_its_timeline_then_its_grade(tmp_path, standin_sandboxes):
    app = LiveApp(spec_for(SAMPLES / "clean_pass.jsonl", tmp_path / "runs"))
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        # The timeline opens on the run's own trace file when the agent starts.
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 240)  # the capture proxy imports openenv first
        assert app.screen.path == live_screen(app).trace_path and app.screen.follow
        await wait_for(pilot, lambda: not live_screen(app).running, 90)
        result = live_screen(app).result
        assert result.status == "finished" and result.grade.env_reward == 1.0
        await back_to_stages(pilot, app)
        outcome = str(app.screen.query_one("#live-outcome").render())
        assert "finished" in outcome and "env_reward 1" in outcome
        await pilot.press("question_mark")  # the stages screen lists its keys, as every screen does
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        listed = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "Timeline" in listed and "Keys" in listed and "Command palette" in listed, listed
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveScreen), 5)
        table = app.screen.query_one("DataTable")
        rows = {str(table.get_row_at(i)[0]): str(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert rows == {name: "done" for name in stages_for("local", "builtin", capture=True)}, rows
        # The states are in the theme's colours, and follow a theme switch.
        for theme in ("textual-dark", "solarized-light"):
            app.theme = theme
            await pilot.pause(0.2)
            success = Color.parse(app.theme_variables["text-success"]).rich_color
            cell = table.get_row_at(0)[1]
            assert cell.style.color == success, (theme, cell.style)
        assert sandbox_dirs(standin_sandboxes) == []
        await pilot.press("q")


async def test_cancel_asks_first_then_stops_the_agent_and_releases_everything(tmp_path, standin_sandboxes):
    marker = f"cancel-asks-{os.getpid()}"
    app = LiveApp(spec_for(_sleeping_recording(tmp_path, marker), tmp_path / "runs"))
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 240)  # the capture proxy imports openenv first
        await wait_for(pilot, lambda: processes_matching(marker), 240)  # the agent is inside its `sleep 300`
        await back_to_stages(pilot, app)
        await pilot.press("escape")
        assert isinstance(app.screen, ConfirmCancel)
        await pilot.press("n")  # keep running: nothing happens
        await pilot.pause(0.5)
        assert live_screen(app).running
        await pilot.press("escape")
        await pilot.press("y")
        await wait_for(pilot, lambda: not live_screen(app).running, 60)
        result = live_screen(app).result
        assert result.status == "cancelled" and result.grade is None
        assert [(call.tool, call.status) for call in result.recovered] == [("bash", "running")]
        assert processes_matching(marker) == []
        assert sandbox_dirs(standin_sandboxes) == []
        await pilot.press("q")


async def test_quitting_during_a_run_cancels_it_and_leaves_nothing(tmp_path, standin_sandboxes):
    marker = f"quit-during-{os.getpid()}"
    app = LiveApp(spec_for(_sleeping_recording(tmp_path, marker), tmp_path / "runs"))
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 240)  # the capture proxy imports openenv first
        await back_to_stages(pilot, app)
        screen = live_screen(app)
        await pilot.press("q")
        for _ in range(600):
            if not screen.running:
                break
            await asyncio.sleep(0.1)
    assert screen.result.status == "cancelled"
    assert processes_matching(marker) == []
    assert sandbox_dirs(standin_sandboxes) == []


async def test_calls_recovered_from_the_export_are_shown_as_unfinished():
    from .test_ui_helpers import loaded, replay_app, screen_lines

    app = replay_app(SAMPLES / "real" / "killed_mid_tool.jsonl")
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await loaded(pilot)
        await pilot.press("4")  # the episode tab
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(app))
        assert "Unfinished calls recovered from opencode export" in shown
        assert "✗ bash" in shown and "status running" in shown and "sleep 300" in shown


async def test_home_lists_the_tasks_and_the_launch_form_starts_a_live_run(tmp_path, standin_sandboxes):
    from textual.widgets import DataTable, Input, Select

    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        table = app.screen.query_one(DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "sales-top-region" in names and len(names) >= 4
        table.move_cursor(row=names.index("sales-top-region"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        # A missing model is said in the form, not as a crash.
        await pilot.click("#run")
        await pilot.pause(0.2)
        assert "no model" in str(app.screen.query_one("#launch-error").render())
        app.screen.query_one("#model", Input).value = f"replay:{SAMPLES / 'clean_pass.jsonl'}"
        assert app.screen.query_one("#capture", Select).value == "on"  # training's proxy unless switched off
        app.screen.query_one("#capture", Select).value = "off"  # as --no-capture
        await pilot.click("#run")
        await wait_for(pilot, lambda: any(isinstance(s, LiveScreen) for s in app.screen_stack), 10)
        await wait_for(pilot, lambda: not live_screen(app).running, 120)
        result = live_screen(app).result
        assert result.status == "finished" and result.grade.env_reward == 1.0
        assert result.metadata.capture == {"enabled": False} and "capture proxy" not in live_screen(app).stages
        assert "capture off" in str(live_screen(app).query_one("#live-header").render())
        assert result.trace_path.parent.parent == tmp_path / "runs"
        assert sandbox_dirs(standin_sandboxes) == []
        # q on the ended run comes back home (not out of the app), whose episode list is read again.
        await back_to_stages(pilot, app)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 5)
        assert app.is_running
        await wait_for(pilot, lambda: "1 saved episode in" in str(app.screen.query_one("#home-episodes").render()), 10)


async def test_at_80x24_the_launch_form_shows_its_task_every_field_and_the_run_button(tmp_path):
    from textual.widgets import Button

    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        await pilot.pause(0.2)
        form = app.screen
        shown = "\n".join(strip.text for strip in form._compositor.render_strips())
        assert f"Run {form.launch_task.name}" in shown
        for label in ("backend", "model", "base URL", "API key", "timeout", "harness", "capture", "sampling"):
            assert label in shown, label
        run = form.query_one("#run", Button)
        assert run.region.bottom <= 24 and run.region.height > 0 and "Run" in shown  # on screen, no scrolling
