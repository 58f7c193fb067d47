"""Colours follow the theme: the episode's panels take their colours from the theme (switching
theme recolours them), never from ANSI names, and the detail pane wraps on word boundaries at 80 columns."""

from __future__ import annotations

from textual.color import Color

from smoldata_tui.ui.widgets.detail import DetailView, wrap_blocks

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app

REAL = SAMPLES / "real"


def segments_of(widget):
    for y in range(widget.size.height):
        yield from widget.render_line(y)


async def test_a_light_theme_draws_the_grade_and_findings_in_its_own_colours():
    app = replay_app(REAL / "failing_run.jsonl")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await loaded(pilot)
        app.theme = "solarized-light"
        await pilot.press("4")
        await pilot.pause(0.2)
        panel = screen.query_one("#episode-text")
        reward = [s for s in segments_of(panel) if s.text.strip() == "0" and s.style and s.style.bold]
        assert reward, "the env_reward value is drawn"
        error = Color.parse(app.theme_variables["text-error"]).rich_color.triplet
        assert reward[0].style.color.triplet == error  # the theme's error colour, not ANSI red
        # the timeline's dim columns (line, time: $text-muted, an "auto" colour) are dark on a light theme
        dim, background = (screen.timeline.row_styles().dim.color.triplet, screen.timeline.row_styles().base.bgcolor.triplet)
        assert sum(dim) < sum(background) - 200, (dim, background)
        app.theme = "textual-dark"
        await pilot.pause(0.2)
        reward = [s for s in segments_of(panel) if s.text.strip() == "0" and s.style and s.style.bold]
        assert reward[0].style.color.triplet == Color.parse(app.theme_variables["text-error"]).rich_color.triplet

def test_the_detail_pane_wraps_on_word_boundaries():
    words = "the model wrote a long sentence that has to wrap somewhere " * 4
    texts, _styles = wrap_blocks([("plain", [words.strip(), "x" * 100])], 38)
    assert all(len(row) <= 38 for row in texts)
    assert all(not row.startswith(" ") and row.split() for row in texts)
    joined = " ".join(texts[:-3])
    assert joined.split() == words.split()  # no word cut in two
    assert texts[-3:] == ["x" * 38, "x" * 38, "x" * 24]  # a word longer than a row is cut where it ends


async def test_the_detail_pane_at_80_columns_keeps_words_whole():
    app = replay_app(REAL / "passing_run.jsonl")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        screen.timeline.go_to_event(1)  # the model's first text
        await pilot.press("enter")
        await pilot.pause(0.2)
        view = screen.query_one(DetailView)
        assert view.size.width <= 80
        rows = view._texts
        assert all(len(row) <= view.wrap_width for row in rows)
        text = view.text.split()
        assert " ".join(rows).split() == text  # every word whole, in order


def _contrast(style, variables) -> float:
    from rich.color import Color as RichColor

    from smoldata_tui.ui.theme_text import contrast

    foreground = style.color or RichColor.parse(variables["foreground"])
    background = style.bgcolor or RichColor.parse(variables["background"])
    return contrast(foreground, background)


async def test_the_cursor_row_reads_at_3_to_1_or_better_in_every_theme():
    """WCAG's 3:1 for the selected row, focused and not, in every theme with its own colours (the
    ANSI themes leave the colours to the terminal)."""
    app = replay_app(REAL / "failing_run.jsonl")
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await loaded(pilot)
        timeline = screen.timeline
        worst = []
        for theme in sorted(name for name in app.available_themes if not name.startswith("ansi")):
            app.theme = theme
            for focused in (True, False):
                (timeline.focus if focused else screen.set_focus)(*(() if focused else (None,)))
                await pilot.pause(0.05)
                strip = timeline.render_line(timeline.cursor - timeline.scroll_offset.y)
                ratios = [_contrast(segment.style, app.theme_variables) for segment in strip
                          if segment.text.strip() and segment.style is not None]
                worst.append((min(ratios), theme, focused))
        assert min(worst)[0] >= 3.0, sorted(worst)[:5]
