"""Agent output is untrusted: escapes, markup and control characters reach the screen inert,
and huge outputs or lines do not freeze the UI."""

from __future__ import annotations

import re

from textual.widgets import SelectionList

from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.ui.screens.filter import FilterScreen
from smoldata_tui.ui.widgets.detail import DetailView

from .test_ui_helpers import (
    SIZE,
    cursor_line,
    detail_text,
    loaded,
    replay_app,
    screen_lines,
    terminal_output,
    timeline,
    wait_for,
    write_trace,
)

EVIL = (
    "[bold]bold[/bold] [link=http://evil.example]click[/link] [red]x "
    "\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ "
    "\x9b2J \x07bell \x08back \r\x1b[2J \u202eevil\u202c"
)
# What the app itself writes to draw: colours (SGR) and cursor moves, nothing else.
OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d+;\d+H")


def evil_trace() -> TraceBuilder:
    b = TraceBuilder()
    b.step_start()
    b.text("title " + EVIL)
    b.bash("echo " + EVIL, "out " + EVIL + "\nsecond line", description="desc " + EVIL)
    b.tool("[b]tool\x1b[2J", {"filePath": EVIL}, "x")
    b.tool("\x1b[2J\x07", {"filePath": "x"}, "x")  # short enough to be shown whole
    b.event("\x1b]0;t\x07")  # an unknown event type
    b.step_finish("stop")
    return b


def assert_inert(output: str) -> None:
    leftover = OWN_SEQUENCES.sub("", output)
    assert "\x1b" not in leftover, repr(leftover[leftover.index("\x1b") - 20 : leftover.index("\x1b") + 20])
    for character in ("\x07", "\x08", "\x9b", "\r", "\u202e"):
        assert character not in output, repr(character)
    assert "\x1b]" not in output  # no OSC: no title change, no hyperlink


async def test_escapes_and_markup_in_tool_output_reach_the_screen_inert(tmp_path):
    path = write_trace(tmp_path / "evil.jsonl", evil_trace())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=(200, 40)) as pilot:
        await loaded(pilot)
        for _ in range(5):  # the text, the bash call, the odd tools and type: rows and detail of each
            await pilot.press("j")
            assert_inert(terminal_output(app))
        await pilot.press("k", "k", "k", "r")  # the bash call's raw line too
        assert_inert(terminal_output(app))
        await pilot.press("r")
        view = timeline(app)
        rows = [view.render_line(y).text for y in range(3)]
        assert rows[1].split("title ", 1)[1].startswith("[bold]bold[/bold] [link=http://evil.example]click")
        assert "desc [bold]bold[/bold] [link=" in rows[2]
        detail = detail_text(app)
        assert "[link=http://evil.example]click[/link]" in detail
        assert "\u241b[31mRED" in detail  # ␛ stands in for ESC
        assert "\u241b]0;pwned\u2407" in detail  # ␛ ... ␇
        assert "<U+009B>2J" in detail and "<U+202E>evil" in detail
        assert cursor_line(app) == 3


async def test_untrusted_tool_names_are_literal_in_the_filter_dialog(tmp_path):
    path = write_trace(tmp_path / "evil.jsonl", evil_trace())
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("f")
        assert isinstance(app.screen, FilterScreen)
        tools = app.screen.query_one("#filter-tools", SelectionList)
        prompts = [str(tools.get_option_at_index(i).prompt) for i in range(tools.option_count)]
        assert any(prompt.startswith("[b]tool\u241b[2J") for prompt in prompts), prompts
        assert_inert(terminal_output(app))


async def test_a_10_mb_output_and_a_200_kb_line_do_not_freeze_the_ui(tmp_path):
    b = TraceBuilder()
    b.step_start()
    big = "".join(f"row {i:07d} " + "x" * 90 + "\n" for i in range(100_000))  # ~10 MB, 100k lines
    b.bash("python3 dump.py", big, description="dump everything")
    b.bash("python3 one_line.py", "y" * 200_000 + "END", description="one long line")
    b.step_finish("stop")
    path = write_trace(tmp_path / "big.jsonl", b)
    app = replay_app(path)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("j")  # onto the 10 MB event: its detail is built off the UI thread
        assert cursor_line(app) == 2
        await pilot.press("j", "k")  # keys are still handled meanwhile
        assert cursor_line(app) == 2
        detail = screen.query_one(DetailView)
        await wait_for(pilot, lambda: "row 0099999" in detail.text, timeout=10, what="the whole 10 MB output")
        assert sum(len(lines) for _style, lines in detail.blocks) > 100_000
        detail.focus()
        await pilot.press("G")  # the end of the output is reachable
        assert any("row 0099999" in line for line in screen_lines(app))
        timeline(app).focus()
        await pilot.press("j")
        await wait_for(pilot, lambda: "END" in detail.text, timeout=10, what="the 200 KB line")
        assert max(len(line) for _style, lines in detail.blocks for line in lines) >= 200_000  # whole, wrapped
        assert all(len(line) <= SIZE[0] for line in screen_lines(app))
