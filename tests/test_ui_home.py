"""The home screen (``smoldata-tui`` with no COMMAND): any task-set folder (``--tasks DIR`` and the
folder field), ``?``, and ``q`` on a run launched from home coming back home. The real app via
Pilot (one real episode: the stand-in OpenCode, as the test is about our screens, in bubblewrap,
answered by the replay model) and in a real pseudo-terminal for the command line."""

from __future__ import annotations

import os

import pytest
from textual.widgets import DataTable, Input, Select

from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm
from smoldata_tui.ui.screens.live import ConfirmCancel, LiveScreen

from .conftest import ROOT
from .test_episode_local import _sleeping_recording, processes_matching, sandbox_dirs
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_tasks_load import write_task
from .test_tui_exit_status import terminal, wait_for_text
from .test_ui_live import wait_for


def shown(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def task_names(app) -> list[str]:
    table = app.screen.query_one(DataTable)
    return [str(table.get_row_at(row)[0]) for row in range(table.row_count)]


@pytest.mark.parametrize(("make", "said"), [
    (lambda root: root / "nope", "no such task directory"),
    (lambda root: root, "holds no task folders"),
    (lambda root: write_task(root, "one") / "task.toml", "not a directory"),
    (lambda root: write_task(root, "broken", toml="[metadata\n").parent, "broken/task.toml"),
])  # fmt: skip
def test_the_bare_command_refuses_a_folder_without_a_task_set(cli, tmp_path, make, said):
    folder = make(tmp_path)
    done = cli("--tasks", str(folder))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"smoldata-tui --tasks: {folder}") and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_the_bare_command_lists_the_task_set_of_tasks_dir(tmp_path):
    root = tmp_path / "my-tasks"
    write_task(root, "only-this-one")
    app = terminal(tmp_path, ["--tasks", str(root)], PYTHONPATH=str(ROOT))
    try:
        wait_for_text(app, b"only-this-one")
        assert b"sales-top-region" not in app.output  # the shipped samples are not listed
        app.type(b"q")
        assert app.wait(30) == 0, app.output[-2000:]
    finally:
        app.kill()


async def test_question_mark_lists_the_home_screens_keys(tmp_path):
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        lines = shown(app).splitlines()
        for keys, what in (("Enter", "Run the task"), ("e", "Saved episodes"), ("f", "Task folder"),
                           ("?", "Keys"), ("q", "Quit")):  # fmt: skip
            assert any(f" {keys} " in line and what in line for line in lines), (keys, what)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 5)


async def test_the_folder_field_lists_another_task_set_and_says_why_it_cannot(tmp_path):
    root = tmp_path / "other-tasks"
    write_task(root, "first-task")
    write_task(root, "second-task")
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        samples = task_names(app)
        assert "sales-top-region" in samples
        await pilot.press("f")
        field = app.screen.query_one("#home-tasks", Input)
        assert app.focused is field
        await pilot.press(*str(tmp_path / "nowhere"), "enter")
        error = app.screen.query_one("#home-folder-error")
        await wait_for(pilot, lambda: "no such task directory" in str(error.render()), 10)
        said = str(error.render())
        assert said == f"{tmp_path / 'nowhere'}: no such task directory (still listing the sample tasks)", said
        # on screen too, where a long temporary path may wrap the sentence over two lines
        await wait_for(pilot, lambda: "no such task directory" in " ".join(shown(app).split()), 10)
        assert task_names(app) == samples  # the old list stays
        field.value = str(root)
        await pilot.press("enter")
        await wait_for(pilot, lambda: task_names(app) == ["first-task", "second-task"], 5)
        assert f"tasks in {str(root)[:60]}" in str(app.screen.query_one("#home-title").render())  # a long path is cut
        assert "no such task directory" not in " ".join(shown(app).split())
        assert app.focused is app.screen.query_one(DataTable)
        await pilot.press("enter")  # the launch form runs a task of the folder shown
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        assert app.screen.launch_task.folder == root / "first-task"


async def test_q_on_a_run_from_home_asks_then_stops_it_and_comes_back_home(tmp_path, standin_sandboxes):
    marker = f"home-q-{os.getpid()}"
    recording = _sleeping_recording(tmp_path, marker)
    runs = tmp_path / "runs"
    app = LiveApp(runs=runs)
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await wait_for(pilot, lambda: "0 saved episodes" in shown(app), 10)  # counted off the UI thread
        app.screen.query_one(DataTable).move_cursor(row=task_names(app).index("sales-top-region"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        app.screen.query_one("#model", Input).value = f"replay:{recording}"
        app.screen.query_one("#capture", Select).value = "off"
        await pilot.click("#run")
        await wait_for(pilot, lambda: any(isinstance(s, LiveScreen) for s in app.screen_stack), 10)
        live = next(s for s in app.screen_stack if isinstance(s, LiveScreen))
        await wait_for(pilot, lambda: processes_matching(marker), 240)  # the agent is inside its `sleep 300`
        while app.screen is not live:  # the timeline opened on the agent's start: back to the stages
            await pilot.press("escape")
            await pilot.pause(0.2)
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmCancel)  # the cancel's question, never a silent stop
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is live, 10)
        assert live.running
        await pilot.press("q")
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 90)
        assert not live.running and live.ended.is_set() and app.is_running  # home, not quit
        result = live.result
        assert result.status == "cancelled" and result.trace_path.is_file()
        assert result.trace_path.with_name("run.meta.json").is_file()
        assert processes_matching(marker) == [] and sandbox_dirs(standin_sandboxes) == []
        await wait_for(pilot, lambda: "1 saved episode in" in shown(app), 5)  # the list is read again
        await pilot.press("q")  # q on home quits
        await wait_for(pilot, lambda: not app.is_running, 10)


async def test_the_cancel_question_is_a_centred_dialog_that_fits_80x24(tmp_path):
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        app.push_screen(ConfirmCancel())
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCancel), 5)
        await pilot.pause(0.2)
        box = app.screen.query_one("#confirm").region
        assert 0 < box.x and box.right < 80 and 0 < box.y and box.bottom < 24, box  # over home, not instead of it
        for button in ("#yes", "#no"):
            region = app.screen.query_one(button).region
            assert region.height > 0 and box.contains_region(region), (button, region)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 5)
