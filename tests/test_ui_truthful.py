"""Screens that tell the truth: an export document says what it is, a replay's divergences show
wherever its grade does, a bash call killed by its timeout is not a green tick."""

from __future__ import annotations

import json
import shutil

from smoldata_tui.trace import analyze_path

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, screen_lines

REAL = SAMPLES / "real"


async def test_an_export_document_opens_as_its_converted_events_with_the_files_own_verdict():
    path = REAL / "export_document.export.json"
    app = replay_app(path)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        screen = await loaded(pilot)
        assert screen.model.count == 13  # 4 steps: starts, texts, 3 calls, finishes
        assert not any(f.kind == "malformed_line" for f in screen.model.findings)
        shown = "\n".join(screen_lines(app))
        assert "opencode export" in shown and "shown converted" in shown
        assert screen.verdict.badge() == analyze_path(path)[0].verdict.badge()  # the wrapper's rule on the file's bytes
        assert "None" in screen_lines(app)[1] and "JSONDecodeError" in screen_lines(app)[1]
        converted = screen.export.converted
    assert not converted.exists()  # the temporary file goes with the screen


async def test_replay_divergences_show_in_the_header_and_the_episode_tab(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for suffix in (".jsonl", ".meta.json"):
        shutil.copy(REAL / f"passing_run{suffix}", folder / f"run{suffix}")
    meta = json.loads((folder / "run.meta.json").read_text())
    meta["trace"], meta["model"] = "run.jsonl", "replay:sample_traces/clean_pass.jsonl"
    (folder / "run.meta.json").write_text(json.dumps(meta))
    divergence = {"kind": "result_changed", "turn": 1, "call_id": "call_1", "tool": "bash",
                  "recorded": "West\n", "now": "Traceback (most recent call last):\nModuleNotFoundError: No module named 'pandas'"}  # fmt: skip
    (folder / "run.divergence.json").write_text(json.dumps([divergence, {"kind": "extra_request", "turn": 4, "recorded_turns": 4}]))
    app = replay_app(folder / "run.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        await pilot.pause(0.3)
        header = screen_lines(app)[0]
        assert "replay diverged (2)" in header and "step 2 bash" in header
        await pilot.press("4")
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(app))
        assert "Replay diverged from its recording (2)" in shown
        assert "now “Traceback (most recent call last):”" in shown or "No module named 'pandas'" in shown
        assert "asked for more" in shown


async def test_a_replay_without_divergences_says_so(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for suffix in (".jsonl", ".meta.json"):
        shutil.copy(REAL / f"passing_run{suffix}", folder / f"run{suffix}")
    meta = json.loads((folder / "run.meta.json").read_text())
    meta["trace"], meta["model"] = "run.jsonl", "replay:passing_run.jsonl"
    (folder / "run.meta.json").write_text(json.dumps(meta))
    app = replay_app(folder / "run.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        await pilot.press("4")
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(app))
        assert "Replay: no divergences" in shown
        assert "replay diverged" not in screen_lines(app)[0]


async def test_a_bash_call_killed_by_its_timeout_is_not_shown_completed():
    app = replay_app(REAL / "bash_timeout.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        row = next(line for line in screen_lines(app) if "sleep 30" in line and "bash" in line)
        assert "timed out" in row and "completed" not in row


async def test_2_focuses_the_findings_list():
    from smoldata_tui.ui.widgets.findings_panel import FindingsList

    app = replay_app(REAL / "tool_errors.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        assert isinstance(app.focused, FindingsList)


async def test_the_launch_form_names_its_fields_and_fits_80_by_24(tmp_path):
    from textual.widgets import DataTable

    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    from .test_ui_helpers import wait_for

    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        assert app.screen.query_one(DataTable).row_count
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        form = app.screen.query_one("LaunchForm > Vertical")
        assert form.region.right <= 80 and form.region.bottom <= 24  # the dialog fits the terminal
        app.screen.query_one("#run").press()
        await pilot.pause(0.2)
        error = str(app.screen.query_one("#launch-error").render())
        assert "model field" in error and "--" not in error
        assert app.focused is app.screen.query_one("#model")


async def test_at_80_columns_the_header_keeps_the_verdict_on_its_second_line():
    app = replay_app(REAL / "killed_mid_tool.jsonl")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await loaded(pilot)
        assert screen_lines(app)[1].lstrip().startswith("verdict")
        assert "native_tool_calls = 1" in screen_lines(app)[1]


async def test_every_theme_draws_the_header_in_its_own_colours():
    app = replay_app(REAL / "bash_timeout.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        for theme in sorted(app.available_themes):
            app.theme = theme
            await pilot.pause(0.05)
            assert "native_tool_calls = 1" in screen_lines(app)[1], theme  # drawn, no missing colour
        app.theme = "textual-light"
        await pilot.pause(0.05)
        badge = next(s for s in app.screen.query_one("#header").render().spans if "on" in str(s.style))
        assert str(badge.style).endswith("on #4ebf71")  # the light theme's success colour, not ANSI green


async def test_a_file_with_no_event_is_not_a_trace_not_a_killed_run(tmp_path):
    """A log or random bytes opened by mistake: its header says so, and a run killed in its first
    step (an event, no step_finish) is still 'killed'."""
    junk = tmp_path / "npm.jsonl"
    junk.write_text("npm warn deprecated inflight@1.0.6\n\x00\x01 binary\n")
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(SAMPLES.joinpath("clean_pass.jsonl").read_bytes().splitlines(keepends=True)[0])  # a step_start
    for path, status in ((junk, " not a trace "), (killed, " killed ")):
        app = replay_app(path)
        async with app.run_test(size=(140, 36)) as pilot:
            await loaded(pilot)
            assert status in screen_lines(app)[0], screen_lines(app)[0]
