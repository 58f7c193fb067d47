"""The diff screen, driven with Pilot in the real app at 80×24: the first divergence focused on
open, ]/[ between differences, the unified diff of the selected pair, the header, help and the
palette, untrusted text shown literally, and the screen pushed onto another app and left again."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.command import CommandPalette
from textual.widgets import Static

from smoldata_tui.diff import CHANGED, SAME
from smoldata_tui.store.metadata import EpisodeMetadata, Grade
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.ui.screens.diff import DiffDetailView, DiffScreen
from smoldata_tui.ui.apps.diff import DiffApp
from smoldata_tui.ui.apps.navigation import Navigation
from smoldata_tui.ui.screens.help import HelpScreen

from .test_diff_cli import HEAD, LS, PY, episode
from .test_ui_helpers import screen_lines, wait_for

SMALL = (80, 24)
OTHER_SESSION = "ses_48925a1c2ffeQx8Wb3LzR7nSkT"


def diff_app(a: Path, b: Path) -> DiffApp:
    app = DiffApp(str(a), str(b))
    app.animation_level = "none"
    return app


async def opened(pilot) -> DiffScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, DiffScreen), what="the diff screen")
    screen = pilot.app.screen
    await wait_for(pilot, lambda: screen.diff is not None or screen.error is not None, what="the diff")
    await pilot.pause()
    return screen


def two_episodes(tmp_path: Path) -> tuple[Path, Path]:
    """A: ls, head, python, write (reward 1). B: ls, head -5 (changed), wc (inserted), python,
    write (reward 0)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    episode(a / "run.jsonl", [LS, HEAD, PY])
    changed = ("head -5 /home/user/input/sales.csv", "order_id,region\n1,West\n2,East\n")
    extra = ("wc -l /home/user/input/sales.csv", "3\n")
    episode(b / "run.jsonl", [LS, changed, extra, PY], session=OTHER_SESSION)
    for folder, reward in ((a, 1.0), (b, 0.0)):
        save_metadata(folder / "run.meta.json", EpisodeMetadata(task="sales-top-region", status="finished",
                                                                 grade=Grade(env_reward=reward), trace="run.jsonl"))  # fmt: skip
    return a, b


async def test_opens_on_the_first_divergence_and_walks_the_differences_at_80x24(tmp_path):
    a, b = two_episodes(tmp_path)
    app = diff_app(a, b)
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        screen = await opened(pilot)
        ops = [pair.op for pair in screen.diff.pairs]
        assert ops == [SAME, CHANGED, "only_b", SAME, SAME]
        assert screen.table.cursor == 1 and screen.table.has_focus
        shown = "\n".join(screen_lines(app))
        # The header: both sides' verdict, grade, calls, and the deltas.
        assert "verdict 4" in shown and "verdict 5" in shown
        assert "reward 1" in shown and "reward 0" in shown
        assert "4 calls" in shown and "5 calls" in shown and "a/run.jsonl" in shown
        assert "calls +1" in shown and "grade 1\u21920" in shown
        # The detail: a unified diff of the changed command and of its output.
        detail = screen.query_one(DiffDetailView).text
        assert "-command: head -3 /home/user/input/sales.csv" in detail
        assert "+command: head -5 /home/user/input/sales.csv" in detail
        assert "+2,East" in detail
        await pilot.press("right_square_bracket")
        assert screen.table.cursor == 2
        assert "only in B" in screen.query_one(DiffDetailView).text
        await pilot.press("right_square_bracket")  # no difference after this one
        assert screen.table.cursor == 2
        await pilot.press("left_square_bracket")
        assert screen.table.cursor == 1
        await pilot.press("j", "j")
        assert screen.table.cursor == 3
        assert "(identical)" in screen.query_one(DiffDetailView).text
        rows = screen_lines(app)
        assert all(len(row) == 80 for row in rows) and len(rows) == 24
        await pilot.press("q")
    assert app.outcome == 1  # the exit status of `smoldata-tui diff A B`


async def test_help_and_palette_list_the_diff_keys(tmp_path):
    a, b = two_episodes(tmp_path)
    app = diff_app(a, b)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await opened(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown = "\n".join(screen_lines(app))
        for description in ("Next difference", "Previous difference", "First divergence", "Next pair", "Quit"):
            assert description in shown, description
        assert "Find" not in shown  # not the episode screen's keys
        await pilot.press("escape")
        assert app.screen is screen
        screen.table.move_to(0)
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Next difference")
        await wait_for(pilot, lambda: "Next difference" in "\n".join(screen_lines(app)), what="the palette's hit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is screen, what="the palette to close")
        await wait_for(pilot, lambda: screen.table.cursor == 1, what="the palette's action to run")


async def test_agent_text_is_shown_literally(tmp_path):
    hostile = ("echo '[bold red]boom[/] \x1b[31mred\x1b[0m\x07'", "[link=http://x]click[/link]\x1b]0;title\x07\n")
    episode(tmp_path / "a.jsonl", [LS])
    episode(tmp_path / "b.jsonl", [hostile], session=OTHER_SESSION)
    app = diff_app(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await opened(pilot)
        assert screen.table.cursor == 0
        detail = screen.query_one(DiffDetailView).text
        assert "[bold red]boom[/]" in detail and "\u241b[31mred" in detail and "\x1b" not in detail
        assert "[link=http://x]click[/link]" in detail and "\u2407" in detail
        shown = "\n".join(screen_lines(app))
        assert "[bold red]boom[/]" in shown and "\x1b" not in shown


async def test_same_calls_exit_zero(tmp_path):
    episode(tmp_path / "a.jsonl", [LS, HEAD])
    episode(tmp_path / "b.jsonl", [LS, HEAD], session=OTHER_SESSION)
    app = diff_app(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    async with app.run_test(size=SMALL) as pilot:
        screen = await opened(pilot)
        assert screen.table.cursor == 0 and "same calls" in "\n".join(screen_lines(app))
        await pilot.press("right_square_bracket")
        assert screen.table.cursor == 0
        await pilot.press("q")
    assert app.outcome == 0


async def test_the_screen_can_be_pushed_from_another_screen_and_left(tmp_path):
    a, b = two_episodes(tmp_path)

    class Host(Navigation, App[None]):
        def compose(self):
            yield Static("the fleet table")

    app = Host()
    app.animation_level = "none"
    async with app.run_test(size=SMALL) as pilot:
        home = app.screen
        app.push_screen(DiffScreen(a, b))
        screen = await opened(pilot)
        assert screen.table.cursor == screen.diff.first_divergence == 1
        await pilot.press("escape")
        assert app.screen is home
        app.push_screen(DiffScreen(b, a))
        screen = await opened(pilot)
        await pilot.press("q")
        assert app.screen is home and app.is_running


async def test_a_path_that_cannot_be_compared_is_said_on_screen(tmp_path):
    episode(tmp_path / "a.jsonl", [LS])
    app = diff_app(tmp_path / "a.jsonl", tmp_path / "missing.jsonl")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        screen = await opened(pilot)
        assert screen.error is not None and "missing.jsonl: no such file or directory" in screen.error
        assert any("Cannot compare" in row for row in screen_lines(app))
        await pilot.press("q")
        assert not app.is_running
    assert app.outcome == 2
