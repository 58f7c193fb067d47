"""replay DIR: the fleet table, driven by Pilot on the real app over generated and sample episodes."""

from __future__ import annotations

import os
import shutil

import pytest

from smoldata_tui.fleet.build import write_fleet
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.store.metadata import EpisodeMetadata, Grade, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.fleet import FleetScreen
from smoldata_tui.ui.screens.help import HelpScreen

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, screen_lines, wait_for

PICKED = ["clean_pass", "missing_call_id", "wrapper_crash_state_null", "tool_errors"]


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def folder_of_traces(tmp_path):
    folder = tmp_path / "episodes"
    folder.mkdir()
    for name in PICKED:
        shutil.copy(SAMPLES / f"{name}.jsonl", folder / f"{name}.jsonl")
    save_metadata(
        metadata_path_for(folder / "clean_pass.jsonl"),
        EpisodeMetadata(task="sales-top-region", model="m1", status="finished", started_at="2026-01-02T03:04:05Z",
                        grade=Grade(env_reward=1.0, correctness=1, grader_output='{"correctness": 1}')),
    )  # fmt: skip
    metadata_path_for(folder / "tool_errors.jsonl").write_text("{ broken")
    return folder


async def fleet_ready(pilot, count: int) -> FleetScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetScreen), what="the fleet table")
    screen = pilot.app.screen
    await wait_for(
        pilot,
        lambda: screen.last_refresh is not None and len(screen.table.rows) >= count,
        timeout=60,
        what=lambda: f"{count} rows (have {len(screen.table.rows)})",
    )
    await pilot.pause()
    return screen


def names(screen) -> list[str]:
    return [os.path.basename(row.path) if isinstance(row, EpisodeSummary) else f"[{row.task}]" for row in screen.table.rows]


def text_of(app) -> str:
    return "\n".join(screen_lines(app))


async def test_rows_header_sort_filter_open_and_back_to_the_same_row(tmp_path):
    folder = folder_of_traces(tmp_path)
    app = replay_app(folder)
    async with app.run_test(notifications=True, size=(200, 30)) as pilot:
        screen = await fleet_ready(pilot, 4)
        lines = screen_lines(app)
        header = "\n".join(lines[:4])
        assert "4 episodes" in header and "accepted by the wrapper 50.0% (2)" in header
        assert "rejected 1" in header and "crashes 1" in header and "pass rate 100.0% (1/1 graded)" in header
        assert "1\u00d7 KeyError: 'callID'" in header
        row = next(line for line in lines if "clean_pass.jsonl" in line)
        for cell in ("sales-top-region", "m1", "2026-01-02 03:04", "finished", "reward 1", "\u2713 3"):
            assert cell in row, (cell, row)
        crash = next(line for line in lines if "wrapper_crash_state_null.jsonl" in line)
        assert "crash: AttributeError" in crash
        assert "bad meta" in next(line for line in lines if "tool_errors.jsonl" in line)

        assert names(screen) == sorted(f"{name}.jsonl" for name in PICKED)
        screen.sort_by("calls", descending=True)
        await pilot.pause()
        assert [r.calls for r in screen.table.rows] == sorted((r.calls for r in screen.table.rows), reverse=True)
        screen.sort_by("episode", descending=False)

        await pilot.press("x")  # only rejected (None or crash)
        assert names(screen) == ["missing_call_id.jsonl", "wrapper_crash_state_null.jsonl"]
        await pilot.press("c")  # and crashed
        assert names(screen) == ["wrapper_crash_state_null.jsonl"]
        assert "filter: rejected, crashed" in text_of(app)
        await pilot.press("escape")  # clears the filters, does not quit
        assert len(screen.table.rows) == 4 and app.is_running

        await pilot.press("slash", *"sales", "enter")  # free text matches the task
        assert names(screen) == ["clean_pass.jsonl"]
        await pilot.press("escape")
        await pilot.press("down", "down")
        assert names(screen)[screen.table.cursor] == "tool_errors.jsonl"
        assert "tool_errors.meta.json: it is not valid JSON" in screen_lines(app)[-2]  # the row's problem
        await pilot.press("up", "enter")
        episode = await loaded(pilot)
        assert isinstance(episode, EpisodeScreen) and episode.path.name == "missing_call_id.jsonl"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="back to the fleet")
        assert names(screen)[screen.table.cursor] == "missing_call_id.jsonl"


async def test_group_by_task_mark_two_help_and_quit(tmp_path):
    folder = tmp_path / "fleet"
    write_fleet(folder, 30, seed=21, defect_rate=0.3)
    app = replay_app(folder)
    async with app.run_test(notifications=True, size=(200, 40)) as pilot:
        screen = await fleet_ready(pilot, 30)
        await pilot.press("b")
        groups = [row for row in screen.table.rows if not isinstance(row, EpisodeSummary)]
        assert sum(group.totals.episodes for group in groups) == 30
        first = groups[0]
        shown = text_of(app)
        rate = f"{100 * first.totals.pass_rate:.0f}%"
        assert f"{first.task}   {first.totals.episodes} episodes · pass rate {rate}" in shown
        await pilot.press("b", "space", "down", "space")
        assert len(screen.table.marked) == 2
        assert any("d compares them" in n.message for n in app._notifications)
        await pilot.press("d")  # the diff screen on the two marked episodes; Esc comes back
        from smoldata_tui.ui.screens.diff import DiffScreen

        assert isinstance(app.screen, DiffScreen)
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "Group by task" in text_of(app) and "Mark for diff" in text_of(app)
        await pilot.press("escape", "q")
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")


async def test_new_episodes_stream_in_while_open(tmp_path):
    folder = tmp_path / "fleet"
    write_fleet(folder, 3, seed=22)
    app = replay_app(folder)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = await fleet_ready(pilot, 3)
        write_fleet(tmp_path / "later", 2, seed=23)
        for episode in (tmp_path / "later").iterdir():
            episode.rename(folder / f"new-{episode.name}")
        await wait_for(pilot, lambda: len(screen.table.rows) == 5, timeout=60, what="the new episodes")
        assert "5 episodes" in text_of(app)


async def test_empty_folder_says_so(tmp_path):
    app = replay_app(tmp_path)
    async with app.run_test(size=(120, 20)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), what="the fleet table")
        await wait_for(pilot, lambda: "no *.jsonl episodes" in text_of(app), timeout=30, what="the message")
        await pilot.press("enter")  # nothing to open: a bell, no crash
        assert isinstance(app.screen, FleetScreen)


async def test_home_saved_episodes_open_the_fleet_table_and_q_comes_back(tmp_path):
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.home import HomeScreen

    runs = tmp_path / "runs"
    write_fleet(runs, 3, seed=24)
    app = LiveApp(runs=runs)
    app.animation_level = "none"
    async with app.run_test(size=(200, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="home")
        await wait_for(pilot, lambda: "3 saved episodes" in text_of(app), what="the count")  # off the UI thread
        await pilot.press("e")
        screen = await fleet_ready(pilot, 3)
        assert "3 episodes" in text_of(app) and not screen.standalone
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), what="back home")
        assert app.is_running


async def test_help_and_palette_list_every_fleet_key_sort_and_filter(tmp_path):
    from textual.command import CommandPalette

    from smoldata_tui.ui.keys import bindings_of
    from smoldata_tui.ui.screens.palette import ScreenCommands
    from smoldata_tui.ui.screens.fleet_table import FleetTable

    folder = folder_of_traces(tmp_path)
    app = replay_app(folder)
    async with app.run_test(notifications=True, size=(200, 60)) as pilot:
        screen = await fleet_ready(pilot, 4)
        titles = {title for title, _help, _run in ScreenCommands(screen)._commands()}
        for owner in (FleetScreen, FleetTable):
            for binding in bindings_of(owner):
                if binding.action != "leave('back')":  # standalone: q quits (test_ui_quit_or_back.py)
                    assert binding.description in titles, binding.description
        assert {"Sort by steps", "Sort by cost, descending", "Filter: task sales-top-region",
                "Filter: finding missing_call_id"} <= titles  # fmt: skip
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and "Open the episode" in text_of(app),
                       what="the help")  # fmt: skip
        shown = text_of(app)
        for owner in (FleetScreen, FleetTable):
            for binding in bindings_of(owner):
                if binding.action != "leave('back')":
                    assert binding.description in shown, binding.description
        await pilot.press("escape", "ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"finding missing_call_id")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.fleet_filter.kind == "missing_call_id", what="the palette's filter")
        assert names(screen) == ["missing_call_id.jsonl"]


async def test_an_indexing_failure_is_said_and_the_rows_stay(tmp_path, monkeypatch):
    folder = tmp_path / "fleet"
    write_fleet(folder, 2, seed=25)
    app = replay_app(folder)
    async with app.run_test(size=(160, 20)) as pilot:
        screen = await fleet_ready(pilot, 2)

        def broken(*_args, **_kwargs):
            raise OSError("the disk went away")

        monkeypatch.setattr(screen.index, "refresh", broken)
        screen.workers.cancel_group(screen, "fleet-index")
        screen._index()
        await wait_for(pilot, lambda: "indexing stopped: OSError: the disk went away" in text_of(app),
                       timeout=30, what="the failure on screen")  # fmt: skip
        assert len(screen.table.rows) == 2 and app.is_running


def odd_fleet(tmp_path):
    """Episodes whose cost, tokens, times and run.meta.json hold numbers no cost or count is."""
    import re

    folder = tmp_path / "odd"
    traces = write_fleet(folder, 4, seed=26, defect_rate=0.0, with_metadata=1.0)
    odd = [(rb'"cost":[0-9.e-]+', b'"cost":NaN'), (rb'"input":[0-9]+', b'"input":Infinity'),
           (rb'"output":[0-9]+', b'"output":123456789012345678901234567890'), (rb'"timestamp":[0-9]+', b'"timestamp":1e309')]  # fmt: skip
    for trace, (pattern, value) in zip(traces, odd):
        trace.write_bytes(re.sub(pattern, value, trace.read_bytes(), count=1))
    meta = traces[0].with_name("run.meta.json")
    meta.write_bytes(re.sub(rb'"env_reward": [0-9.]+', b'"env_reward": NaN', meta.read_bytes()))
    past = 1_700_000_000
    for path in folder.rglob("*"):
        os.utime(path, (past, past))  # settled: the cache keeps them
    return folder


async def test_odd_numbers_show_the_same_rows_cold_and_cached(tmp_path):
    folder = odd_fleet(tmp_path)
    shown = []
    for _ in range(2):  # cold (every episode analysed), then from the cache
        app = replay_app(folder)
        async with app.run_test(size=(220, 20)) as pilot:
            screen = await fleet_ready(pilot, 4)
            shown.append((screen.last_refresh.analysed, [line.rstrip() for line in screen_lines(app)]))
            await pilot.press("s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "s", "S")  # sort by each column
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, what="the app to quit")
        assert app.return_code in (0, None)
    (cold_analysed, cold), (cached_analysed, cached) = shown
    assert cold_analysed == 4 and cached_analysed == 0
    assert cached == cold
    assert "4 episodes · accepted by the wrapper 100.0% (4)" in cold[1], cold
    assert "env_reward should be a finite number within ±2^53, not NaN: ignored" in "\n".join(cold)
