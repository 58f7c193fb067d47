"""Search (``/``, n/N, Esc) and the filter (``f``, ``e``, ``u``), which hides rows."""

from __future__ import annotations

from textual.widgets import SelectionList

from smoldata_tui.ui.screens.filter import FilterScreen
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.find_bar import FindBar

from .test_ui_helpers import (
    SIZE,
    cursor_line,
    loaded,
    replay_app,
    screen_lines,
    searched,
    small_episode,
    timeline,
    wait_for,
    write_trace,
)


def episode_with_quotes():
    b = small_episode()
    b.step_start()
    b.text('Then I said "pandas is missing" out loud.')
    b.step_finish("stop")
    return b


def find_count(app) -> str:
    return str(app.screen.query_one("#find-count").render())


async def test_search_counts_moves_and_clears(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", episode_with_quotes())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("slash")
        bar = screen.query_one(FindBar)
        assert bar.is_open and app.focused is bar.query_one("#find-input")
        await pilot.press(*"pandas")
        await wait_for(pilot, lambda: searched(screen, "pandas"), what="search results")
        # the python command (line 7), its title... and the quoted sentence (line 14)
        assert list(screen.search.matches) == [6, 13]
        await pilot.press("enter")  # go to the first match, back to the timeline
        assert app.focused is timeline(app)
        assert cursor_line(app) == 7
        assert find_count(app).startswith("1/2")
        await pilot.press("n")
        assert cursor_line(app) == 14
        assert find_count(app).startswith("2/2")
        detail = screen.query_one(DetailView)
        assert detail.highlight is not None  # the query is marked in the detail pane too
        marked = [row for row in range(3) if "pandas" in detail.render_line(row).text]
        base = detail.rich_style.bgcolor
        assert marked and any(
            seg.text.lower() == "pandas" and seg.style.bgcolor != base for seg in detail.render_line(marked[0])
        )
        await pilot.press("n")  # wraps
        assert cursor_line(app) == 7
        await pilot.press("N")
        assert cursor_line(app) == 14
        await pilot.press("escape")  # clears the search; n walks findings again
        assert not screen.search.active and not bar.is_open
        await pilot.press("g", "n")
        assert cursor_line(app) == 6


async def test_search_finds_text_as_json_escapes_it_and_says_no_match(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", episode_with_quotes())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("slash", *'"pandas is', "enter")
        await wait_for(pilot, lambda: searched(screen, '"pandas is'), what="search")
        assert list(screen.search.matches) == [13]
        assert cursor_line(app) == 14
        await pilot.press("slash", *"zebra", "enter")
        await wait_for(pilot, lambda: searched(screen, "zebra"), what="search")
        assert find_count(app).startswith("no match")


async def test_smart_case(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", episode_with_quotes())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("slash", *"WEST", "enter")
        await wait_for(pilot, lambda: searched(screen, "WEST"), what="search")
        assert list(screen.search.matches) == []  # capitals: case-sensitive
        await pilot.press("slash", *"west", "enter")
        await wait_for(pilot, lambda: searched(screen, "west"), what="search")
        assert list(screen.search.matches) == [9, 10]


async def test_findings_only_filter_hides_rows_and_keeps_the_cursor(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("n")  # the failed read, line 6
        await pilot.press("e")
        assert screen.model.row_count == 2
        assert cursor_line(app) == 6
        lines = screen_lines(app)
        assert not any("List input files" in line for line in lines)  # hidden, not just dimmed
        assert any("filter" in line and "2 of 12 events" in line for line in lines)
        await pilot.press("j")
        assert cursor_line(app) == 7
        await pilot.press("u")
        assert screen.model.row_count == 12
        assert cursor_line(app) == 7


async def test_filter_dialog_by_type_and_search_skips_hidden_rows(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", episode_with_quotes())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("f")
        assert isinstance(app.screen, FilterScreen)
        kinds = app.screen.query_one("#filter-kinds", SelectionList)
        kinds.focus()
        position = [kinds.get_option_at_index(i).value for i in range(kinds.option_count)].index("tool_use")
        kinds.highlighted = position
        await pilot.press("space")
        assert screen.model.row_count == 4  # applied at once, behind the dialog
        await pilot.press("escape")
        assert app.screen is screen
        assert {screen.model.record(screen.model.event_at(row)).kind for row in range(4)} == {"tool_use"}
        await pilot.press("slash", *"pandas", "enter")
        await wait_for(pilot, lambda: searched(screen, "pandas"), what="search")
        assert cursor_line(app) == 7
        await pilot.press("n")  # the other match (a text event) is filtered out: stay, wrap
        assert cursor_line(app) == 7
        assert "(2 in all)" in str(app.screen.query_one("#find-count").render())


async def test_finding_jump_clears_a_filter_that_hides_it(tmp_path):
    path = write_trace(tmp_path / "run.jsonl", small_episode())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        screen.apply_filter(screen.model.filter.with_changes(kinds=frozenset({"text"})))
        await pilot.pause()
        screen.jump_to_event(5)  # the failed read
        await pilot.pause()
        assert not screen.model.filter.active
        assert cursor_line(app) == 6


async def test_notifications_are_plain_text_and_shown(tmp_path):
    """A wrapped search says so in a toast; its text is literal (a regression: Text in notify crashed)."""
    path = write_trace(tmp_path / "run.jsonl", episode_with_quotes())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G", "slash", *"pandas", "enter")  # from the end: wraps to the first match
        await wait_for(
            pilot, lambda: any("Search wrapped around." in line for line in screen_lines(app)), what="the toast"
        )
        screen.tell("[bold]x[/bold] \x1b[31m")
        await pilot.pause(0.1)
        assert any("[bold]x[/bold] \u241b[31m" in line for line in screen_lines(app))
        assert app.is_running
