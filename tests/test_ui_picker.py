"""replay DIR: the picker lists traces with verdict, steps, calls, findings, grade and date."""

from __future__ import annotations

import os
import shutil

from textual.widgets import DataTable

from smoldata_tui.session.metadata import EpisodeMetadata, Grade, metadata_path_for, save_metadata
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.picker import PickerScreen

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, screen_lines, wait_for

PICKED = ["clean_pass", "missing_call_id", "wrapper_crash_state_null", "tool_errors"]
JAN_1 = 1767225600  # 2026-01-01T00:00:00Z


def folder_of_traces(tmp_path):
    folder = tmp_path / "episodes"
    folder.mkdir()
    for name in PICKED:
        target = folder / f"{name}.jsonl"
        shutil.copy(SAMPLES / f"{name}.jsonl", target)
        os.utime(target, (JAN_1, JAN_1))
    save_metadata(
        metadata_path_for(folder / "clean_pass.jsonl"),
        EpisodeMetadata(
            task="sales-top-region",
            model="m1",
            status="finished",
            started_at="2026-01-02T03:04:05Z",
            grade=Grade(env_reward=1.0, correctness=1, grader_output='{"correctness": 1}'),
        ),
    )
    return folder


def table_rows(app) -> list[list[str]]:
    table = app.screen.query_one(DataTable)
    return [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]


async def picker_ready(pilot) -> PickerScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, PickerScreen), what="the picker")
    screen = pilot.app.screen
    await wait_for(
        pilot,
        lambda: (
            "traces" in str(screen.query_one("#picker-status").render())
            and "reading" not in str(screen.query_one("#picker-status").render())
        ),
        what="every trace read",
    )
    await pilot.pause()
    return screen


async def test_picker_lists_filters_opens_and_comes_back(tmp_path):
    folder = folder_of_traces(tmp_path)
    app = replay_app(folder)
    async with app.run_test(notifications=True, size=(130, 24)) as pilot:
        await picker_ready(pilot)
        rows = {row[0]: row for row in table_rows(app)}
        assert sorted(rows) == sorted(f"{name}.jsonl" for name in PICKED)
        clean = rows["clean_pass.jsonl"]
        assert clean[1:] == ["sales-top-region", "\u2713 accepted", "4", "3", "none", "reward 1", "2026-01-02 03:04"]
        assert rows["missing_call_id.jsonl"][2] == "None: 'callID'"  # the reason, not only KeyError
        assert rows["wrapper_crash_state_null.jsonl"][2].startswith("crash: AttributeError: 'NoneType'")
        assert rows["tool_errors.jsonl"][5].split() == ["!1", "\u00b71"]
        assert rows["tool_errors.jsonl"][7] == "2026-01-01 00:00"

        await pilot.press("slash", *"crash")  # typing filters only after /
        assert [row[0] for row in table_rows(app)] == ["wrapper_crash_state_null.jsonl"]
        await pilot.press("escape")  # clears the filter text
        assert len(table_rows(app)) == 4
        await pilot.press(*"sales", "enter")  # the task matches too
        screen = await loaded(pilot)
        assert screen.path.name == "clean_pass.jsonl"
        assert "sales-top-region" in screen_lines(app)[0] and "reward 1" in screen_lines(app)[0]
        await pilot.press("q")  # back to the picker, not out of the app
        assert isinstance(app.screen, PickerScreen)
        await pilot.press("escape", "escape", "down", "enter")  # clear, back to the list, move
        screen = await loaded(pilot)
        assert isinstance(screen, EpisodeScreen) and screen.path.name == "missing_call_id.jsonl"


async def test_q_and_question_mark_act_on_the_picker(tmp_path):
    from smoldata_tui.ui.screens.help import HelpScreen

    folder = folder_of_traces(tmp_path)
    app = replay_app(folder)
    async with app.run_test(notifications=True, size=(80, 24)) as pilot:
        await picker_ready(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, PickerScreen)
        assert app.screen.query_one("#picker-filter").value == ""  # nothing was typed into the filter
        await pilot.press("q")
    assert app.return_code == 0 and not app.is_running


async def test_empty_folder_says_so(tmp_path):
    app = replay_app(tmp_path)
    async with app.run_test(notifications=True, size=(100, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen), what="the picker")
        await wait_for(
            pilot, lambda: "no *.jsonl" in str(app.screen.query_one("#picker-status").render()), what="the message"
        )
        await pilot.press("enter")  # nothing to open: a bell, no crash
        assert isinstance(app.screen, PickerScreen)
