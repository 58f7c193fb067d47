"""The episode screen on a saved trace: keys, mouse, detail pane, raw JSON, findings jumps."""

from __future__ import annotations

from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.findings_panel import FindingsList
from smoldata_tui.ui.widgets.timeline import Timeline

from .conftest import SAMPLES
from .test_ui_helpers import (
    SIZE,
    cursor_line,
    detail_text,
    loaded,
    replay_app,
    screen_lines,
    small_episode,
    timeline,
    write_trace,
)


async def test_keys_move_the_cursor_and_the_detail_follows(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        assert screen.model.count == 12
        assert cursor_line(app) == 1
        await pilot.press("j", "j")
        assert cursor_line(app) == 3
        assert "List input files" in detail_text(app)
        assert "ls -la /home/user/input" in detail_text(app)
        await pilot.press("k")
        assert cursor_line(app) == 2
        await pilot.press("G")
        assert cursor_line(app) == 12
        await pilot.press("g")
        assert cursor_line(app) == 1
        await pilot.press("end")
        assert cursor_line(app) == 12
        await pilot.press("home", "down")
        assert cursor_line(app) == 2


async def test_page_keys_move_by_a_screenful_on_a_long_trace(tmp_path):
    b = small_episode()
    for _ in range(40):
        b.step_start()
        b.text("more")
        b.step_finish("tool-calls")
    path = write_trace(tmp_path / "long.jsonl", b)
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        view = timeline(app)
        height = view.scrollable_content_region.height
        await pilot.press("pagedown")
        assert view.cursor == height - 1
        assert view.scroll_offset.y > 0
        await pilot.press("pageup")
        assert view.cursor == 0
        await pilot.press("G")
        assert view.cursor == view.row_count - 1
        assert view.scroll_offset.y == view.max_scroll_y
        # The cursor row is always on screen.
        assert view.scroll_offset.y <= view.cursor < view.scroll_offset.y + height


async def test_rows_show_line_time_step_type_tool_title_status_and_duration(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=(180, 30)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("p")  # hide the side panel: the timeline gets the full width
        assert not screen.panel_visible
        lines = screen_lines(app)
        row = next(line for line in lines if "List input files" in line)
        assert row.split()[:6] == ["3", "+1.242s", "1", "tool_use", "bash", "List"]
        assert "completed" in row and "40ms" in row
        failed = next(line for line in lines if "File not found" in line)
        assert failed.startswith("!")  # a warning finding: tool_error
        assert "tool error" in failed and " error " in failed
        exit_row = next(line for line in lines if "Try pandas" in line)
        assert "exit 1" in exit_row  # the info badge
        await pilot.press("p")
        lines = screen_lines(app)
        row = next(line for line in lines if "List input files" in line)
        assert row.split()[:6] == ["3", "+1.242s", "1", "tool", "bash", "List"]  # compact names


async def test_click_selects_and_double_click_opens_the_detail(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.click(Timeline, offset=(10, 4))
        assert cursor_line(app) == 5
        await pilot.double_click(Timeline, offset=(10, 2))
        assert cursor_line(app) == 3
        assert app.focused is app.screen.query_one(DetailView)


async def test_enter_focuses_the_detail_and_escape_comes_back(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=(100, 30)) as pilot:  # narrow: the panel starts hidden
        screen = await loaded(pilot)
        assert not screen.panel_visible
        await pilot.press("j", "j", "enter")
        assert screen.panel_visible
        assert app.focused is screen.query_one(DetailView)
        assert "List input files" in detail_text(app)
        await pilot.press("escape")
        assert app.focused is timeline(app)


async def test_raw_toggle_shows_the_exact_line(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    raw_line = path.read_bytes().splitlines()[2].decode()
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("j", "j", "r")
        assert raw_line in detail_text(app)
        assert "exactly as written" in detail_text(app)
        await pilot.press("r")
        assert raw_line not in detail_text(app)
        assert "\u2500\u2500 Command" in detail_text(app)


async def test_step_finish_detail_has_tokens_and_cost(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("j", "j", "j")
        text = detail_text(app)
        assert "step_finish" in text and "input" in text and "cost" in text and "took" in text


async def test_next_and_previous_finding(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("n")
        assert cursor_line(app) == 6  # the failed read
        await pilot.press("n")
        assert cursor_line(app) == 7  # python exited 1
        await pilot.press("n")
        assert cursor_line(app) == 6  # wraps around
        await pilot.press("N")
        assert cursor_line(app) == 7
        await pilot.press("left_square_bracket")
        assert cursor_line(app) == 6


async def test_findings_panel_enter_jumps_to_the_line(tmp_path):
    path = SAMPLES / "duplicate_call_id_reused.jsonl"
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("2")
        listing = screen.query_one(FindingsList)
        assert listing.count == 1
        listing.focus()
        await pilot.press("enter")
        assert cursor_line(app) == 5
        assert app.focused is timeline(app)
        assert "repeats the one on line 2" in detail_text(app)


async def test_duplicate_points_at_its_twin_and_verdict_is_in_the_header(tmp_path):
    app = replay_app(SAMPLES / "duplicate_call_id_reused.jsonl")
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        lines = screen_lines(app)
        assert any("None \u2014 ValueError: Missing or repeated tool action IDs (line 5)" in line for line in lines)
        assert any("dup\u2192L2" in line for line in lines)
        assert "finished" in lines[0]
        await pilot.press("n", "t")  # the duplicate, then its twin
        assert cursor_line(app) == 2


async def test_crash_verdict_and_killed_status(tmp_path):
    app = replay_app(SAMPLES / "wrapper_crash_state_null.jsonl")
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        assert any("wrapper would crash \u2014 AttributeError" in line for line in screen_lines(app))
    app = replay_app(SAMPLES / "killed_mid_step.jsonl")
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        assert "killed" in screen_lines(app)[0]
        assert "native_tool_calls = 3" in screen_lines(app)[1]


# The odd shapes; every sample's rows and details are also built by tests/test_summary.py.
ODD_SAMPLES = [
    "empty",
    "malformed_line",
    "truncated_last_line",
    "undecodable_bytes",
    "line_separator_in_output",
    "wrapper_crash_deep_nesting",
    "wrapper_crash_non_object",
    "unknown_event_type",
]


async def test_odd_samples_open_and_every_panel_renders():
    """One app, each odd sample pushed in turn: it loads, shows its verdict, every tab renders."""
    app = replay_app(SAMPLES / "clean_pass.jsonl")
    async with app.run_test(notifications=True, size=(120, 30)) as pilot:
        await loaded(pilot)
        for name in ODD_SAMPLES:
            path = SAMPLES / f"{name}.jsonl"
            app.push_screen(EpisodeScreen(path, from_picker=True))
            screen = await loaded(pilot)
            screen.timeline.action_last()
            screen.action_toggle_raw()
            for tab in ("findings", "stats", "episode", "detail"):
                screen.action_show_tab(tab)
            await pilot.pause()
            assert screen.verdict.badge()[:40] in screen_lines(app)[1], name
            screen.dismiss(None)


async def test_mouse_selects_text_in_the_detail_pane(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("j", "j")
        await pilot.mouse_down(DetailView, offset=(1, 0))  # (the pane has one cell of padding)
        await pilot.hover(DetailView, offset=(10, 1))
        await pilot.mouse_up(DetailView, offset=(10, 1))
        selected = screen.get_selected_text()
        assert selected.startswith("tool_use  \u00b7  bash  \u00b7  line 3") and selected.count("\n") == 1
