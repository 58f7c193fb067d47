"""Every theme is readable: on the real screens, rendered by Textual, every letter and digit reads at
WCAG's 4.5:1 or better against the colour behind it (3:1 on a cursor row), in every theme the palette
offers (the ANSI ones leave their colours to the terminal, so they cannot be measured) at 160×45, and
at 80×24 in a dark, a light and the two tightest themes: the episode screen's tabs, help, command
palette, detail, find bar and filter; the fleet table, attempt groups and signatures; home and the
launch form; the diff; a real live episode and batch (the stand-in OpenCode: what is measured is
our screens, not OpenCode).

The colours are the ones Textual sends to the terminal: the compositor's strips after the app's
line filters (which turn ``dim`` into the text colour blended a third of the way into its
background; ``text-opacity`` and translucent backgrounds are blended by then); ``reverse`` swaps them.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.color import Color as RichColor
from rich.segment import Segment
from textual.app import App
from textual.color import Color
from textual.filter import dim_color
from textual.widgets import SelectionList
from textual.widgets._toggle_button import ToggleButton

from smoldata_tui.store.metadata import metadata_path_for
from smoldata_tui.ui.theme_text import READABLE, contrast, readable_variables

from .conftest import SAMPLES
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_ui_helpers import loaded, replay_app, wait_for

TEXT_MINIMUM = 4.5
CURSOR_MINIMUM = 3.0  # the selected row: WCAG's 3:1 for the state shown
SIZES = ((160, 45), (80, 24))


# At 80×24 the layout changes (columns give way, text is cut short), not the colours: every theme is
# measured at 160×45, and at 80×24 a dark and a light one and the two with the least margin.
NARROW_THEMES = frozenset({"textual-dark", "textual-light", "solarized-light", "nord"})


def measured_themes(app: App, half: int | None = None) -> list[str]:
    """The themes measured at the app's size; ``half`` (0 or 1) takes every other one of them, so the
    longest sweeps run as two tests side by side (each theme costs about half a second)."""
    names = sorted(name for name in app.available_themes if not name.startswith("ansi"))
    names = names if app.size.width >= 100 else [name for name in names if name in NARROW_THEMES]
    return names if half is None else names[half::2]


# The sweeps with the most views, at 160×45, each as two tests (half the themes each): one test of
# 60-70 s would otherwise be the suite's tail on two CPUs.
SIZES_AND_HALVES = (((160, 45), 0), ((160, 45), 1), ((80, 24), None))


def _size_and_half_id(case) -> str:
    (width, height), half = case
    return f"{width}x{height}" + ("" if half is None else f"-half{half}")


@dataclass(frozen=True)
class Cell:
    ratio: float
    text: str
    colour: str
    background: str
    row: int
    cursor: bool = False  # on a widget's cursor (or highlighted option) row

    @property
    def minimum(self) -> float:
        return CURSOR_MINIMUM if self.cursor else TEXT_MINIMUM


def _hex(colour: RichColor) -> str:
    red, green, blue = colour.get_truecolor()
    return f"#{red:02x}{green:02x}{blue:02x}"


def _colours(segment: Segment, app: App) -> tuple[RichColor, RichColor]:
    """The text and background colours a terminal shows for this segment."""
    style = segment.style
    variables = app.theme_variables
    default_background = Color.parse(variables["background"]).rich_color
    default_foreground = Color.parse(variables["foreground"]).rich_color
    color = style.color if style and style.color and not style.color.is_default else default_foreground
    bgcolor = style.bgcolor if style and style.bgcolor and not style.bgcolor.is_default else default_background
    if style and style.dim:  # left by the filters only when there was no colour to blend
        color = dim_color(bgcolor, color)
    if style and style.reverse:
        color, bgcolor = bgcolor, color
    return color, bgcolor


def _words(text: str) -> str:
    return "".join(character for character in text if character.isalnum())


def _shown_regions(app: App) -> list:
    """Where the current screen's own widgets are: behind a dialog the screen below is faded on
    purpose (not meant to be read while the dialog is open), so only the dialog is measured."""
    return [widget.region for widget in app.screen.children if widget.display]


def _unticked_box(app: App, segment: Segment, x: int, y: int) -> bool:
    """The X of an unticked box is drawn faint on purpose (its faintness is the state, WCAG's 3:1
    for a state indicator is between ticked and not): not text to read."""
    if segment.text != ToggleButton.BUTTON_INNER:
        return False
    widget, _region = app.screen.get_widget_at(x, y)
    return isinstance(widget, (ToggleButton, SelectionList))


def _cursor_backgrounds(widget) -> set[str]:
    """The backgrounds of the widget's cursor rows, from its own component classes (ours and Textual's)."""
    names = {name for cls in type(widget).__mro__ for name in getattr(cls, "COMPONENT_CLASSES", ())
             if "cursor" in name or "highlighted" in name}  # fmt: skip
    found = set()
    for name in names:
        bgcolor = widget.get_component_rich_style(name).bgcolor
        if bgcolor is not None:
            found.add(_hex(bgcolor))
    return found


def rendered_cells(app: App) -> list[Cell]:
    """Every run of letters and digits on the screen, with its contrast, as the terminal gets it."""
    cells = []
    regions = _shown_regions(app)
    cursor_backgrounds: dict = {}
    for row, strip in enumerate(app.screen._compositor.render_strips()):
        x = 0
        for segment in strip:
            start, x = x, x + segment.cell_length
            if segment.control or not _words(segment.text):
                continue
            if not any(region.contains(start, row) for region in regions):
                continue
            if _unticked_box(app, segment, start, row):
                continue
            color, bgcolor = _colours(segment, app)
            widget, _region = app.screen.get_widget_at(start, row)
            if widget not in cursor_backgrounds:
                cursor_backgrounds[widget] = _cursor_backgrounds(widget)
            cursor = _hex(bgcolor) in cursor_backgrounds[widget]
            cells.append(Cell(contrast(color, bgcolor), segment.text.strip(), _hex(color), _hex(bgcolor), row, cursor))
    return cells


def offenders(app: App, where: str, minimum: float | None = None) -> list[tuple[float, str]]:
    """Cells under their minimum (or ``minimum``) in the current theme, described for an assertion message."""
    return [
        (cell.ratio, f"{cell.ratio:.2f}:1 {app.theme} {where} row {cell.row}{' (cursor)' if cell.cursor else ''} "
                     f"{cell.text[:40]!r} {cell.colour} on {cell.background}")  # fmt: skip
        for cell in rendered_cells(app)
        if cell.ratio < (cell.minimum if minimum is None else minimum)
    ]


async def every_theme(pilot, where: str, views: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (),
                      half: int | None = None) -> list:  # fmt: skip
    """The offenders of the current screen in each measured theme (of ``half`` of them: see
    :func:`measured_themes`); with ``views`` (keys that open a view, its name, keys that leave it),
    of each view in turn in each theme (a theme change restyles every widget, half a second here;
    pressing a tab's key costs little)."""
    app = pilot.app
    found = []
    for theme in measured_themes(app, half):
        app.theme = theme
        await pilot.pause(0.05)
        for before, name, after in views or (((), "", ()),):
            await pilot.press(*before)
            await pilot.pause(0.05 if before else 0)
            found += offenders(app, f"{where} {name}".strip())
            await pilot.press(*after)
    return found


def report(found: list[tuple[float, str]]) -> str:
    worst = sorted(set(found))
    return f"{len(worst)} cells below {TEXT_MINIMUM}:1 ({CURSOR_MINIMUM}:1 on a cursor row), the worst:\n" + "\n".join(text for _ratio, text in worst[:25])


def test_the_contrast_helper_is_wcag():
    black, white = RichColor.from_rgb(0, 0, 0), RichColor.from_rgb(255, 255, 255)
    assert round(contrast(black, white), 2) == 21.0
    assert round(contrast(white, white), 2) == 1.0
    assert round(contrast(RichColor.from_rgb(0x77, 0x77, 0x77), white), 2) == 4.48  # WCAG's classic near miss


def _reads(colour: str, backgrounds: list[str]) -> float:
    return min(contrast(Color.parse(colour).rich_color, Color.parse(background).rich_color) for background in backgrounds)


def test_a_theme_keeps_the_colours_that_read_and_the_others_move_the_least_that_reads():
    app = App()  # Textual's own variables, as a theme gives them
    moved = set()
    for theme in sorted(app.available_themes):
        app.theme = theme
        given = app.get_css_variables()
        made = readable_variables(given)
        if theme.startswith("ansi"):
            assert made == given  # the terminal picks those colours
            continue
        surfaces = [given[name] for name in ("background", "surface", "panel")]
        for name in ("foreground", "text-primary", "text-accent", "text-warning", "text-error", "text-success"):
            if _reads(given[name], surfaces) >= READABLE:
                assert made[name] == given[name], (theme, name)
            else:
                moved.add((theme, name))
                assert _reads(made[name], surfaces) >= READABLE, (theme, name, made[name])
                # one step less towards black or white does not read: it moved the least it could
                towards = "#ffffff" if Color.parse(given["background"]).brightness < 0.5 else "#000000"
                before = Color.parse(given[name]).blend(Color.parse(towards), 0.0)
                steps = [before.blend(Color.parse(towards), step / 20).hex for step in range(21)]
                assert made[name].upper() in steps and _reads(steps[steps.index(made[name].upper()) - 1], surfaces) < READABLE
        footer = [given["footer-background"]]
        assert _reads(made["footer-key-foreground"], footer) >= READABLE, theme
        assert _reads(made["footer-description-foreground"], footer) >= READABLE, theme
    assert ("solarized-dark", "foreground") in moved  # 4.1:1 on its own surface
    assert not any(theme == "dracula" for theme, _name in moved)  # its text colours read as they are


def graded_episode(folder: Path) -> Path:
    trace = folder / "failing_run.jsonl"
    shutil.copy(SAMPLES / "real" / "failing_run.jsonl", trace)
    shutil.copy(SAMPLES / "real" / "failing_run.meta.json", metadata_path_for(trace))
    return trace


@pytest.mark.parametrize("case", SIZES_AND_HALVES, ids=_size_and_half_id)
async def test_the_episode_screen_reads_in_every_theme(tmp_path, case):
    size, half = case
    app = replay_app(graded_episode(tmp_path))
    found = []
    async with app.run_test(size=size) as pilot:
        screen = await loaded(pilot)
        screen.timeline.go_to_event(3)
        views = (*(((key,), name, ()) for key, name in (("2", "findings tab"), ("4", "episode tab"), ("3", "stats tab"),
                                                        ("c", "conversation"))),
                 (("question_mark",), "help", ("escape",)), (("ctrl+p",), "command palette", ("escape",)))  # fmt: skip
        found += await every_theme(pilot, f"episode {size}", views, half)
    assert not found, report(found)


async def test_the_fork_question_reads_in_every_theme(tmp_path):
    """``F`` on a graded recording's row: the question before the fork form, its buttons focused in turn."""
    from smoldata_tui.ui.screens.fork_launch import ConfirmFork

    app = replay_app(graded_episode(tmp_path))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await loaded(pilot)
        screen.timeline.go_to_event(3)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmFork), what="the fork question")
        found = await every_theme(pilot, "fork question", ((((), "yes focused", ("tab",))), (((), "no focused", ("tab",)))))
    assert not found, report(found)


def sample_fleet(folder: Path) -> Path:
    """The shipped samples, the real recordings with their metadata among them."""
    episodes = folder / "episodes"
    shutil.copytree(SAMPLES, episodes, ignore=shutil.ignore_patterns("*.py", "*.md"))
    return episodes


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_the_fleet_table_reads_in_every_theme(tmp_path, monkeypatch, size):
    from smoldata_tui.ui.screens.fleet import FleetScreen

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    app = replay_app(sample_fleet(tmp_path))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), what="the fleet table")
        screen = app.screen
        await wait_for(pilot, lambda: screen.last_refresh is not None and len(screen.table.rows) >= 30,
                       timeout=120, what="every trace read")  # fmt: skip
        await pilot.press("down", "down")
        found = await every_theme(pilot, f"fleet {size}")
    assert not found, report(found)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_home_and_the_launch_form_read_in_every_theme(tmp_path, size):
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    app = LiveApp(runs=tmp_path / "runs")
    app.animation_level = "none"
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10, what="home")
        await pilot.pause(0.1)
        found = await every_theme(pilot, f"home {size}")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5, what="the launch form")
        await pilot.pause(0.1)
        found += await every_theme(pilot, f"launch form {size}")
    assert not found, report(found)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_the_diff_screen_reads_in_every_theme(tmp_path, size):
    from .test_diff_screen import diff_app, opened, two_episodes

    app = diff_app(*two_episodes(tmp_path))
    async with app.run_test(size=size) as pilot:
        await opened(pilot)
        found = await every_theme(pilot, f"diff {size}")
    assert not found, report(found)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_the_attempt_groups_and_signatures_read_in_every_theme(tmp_path, monkeypatch, size):
    from smoldata_tui.ui.screens.group import GroupScreen
    from smoldata_tui.ui.screens.groups import GroupsScreen
    from smoldata_tui.ui.screens.signatures import SignaturesScreen

    from .test_groups import RIGHT, WRONG, _batch, _trace
    from .test_ui_fleet import fleet_ready

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    _batch(tmp_path / "batch", [("split-task", 0, 1.0, _trace(RIGHT)), ("split-task", 1, 0.0, _trace(WRONG)),
                                ("split-task", 2, 1.0, _trace(RIGHT, repeat_id=True))])  # fmt: skip
    app = replay_app(tmp_path / "batch")
    async with app.run_test(size=size) as pilot:
        fleet = await fleet_ready(pilot, 3)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen), what="the groups")
        await pilot.pause(0.1)
        found = await every_theme(pilot, f"groups {size}")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.screen.calls is not None,
                       what="one group")  # fmt: skip
        await pilot.pause(0.1)
        found += await every_theme(pilot, f"group {size}")
        await pilot.press("escape", "escape")
        await wait_for(pilot, lambda: app.screen is fleet, what="back to the fleet")
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SignaturesScreen), what="the signatures")
        await pilot.pause(0.1)
        found += await every_theme(pilot, f"signatures {size}")
    assert not found, report(found)


@pytest.mark.parametrize("case", SIZES_AND_HALVES, ids=_size_and_half_id)
async def test_the_training_tab_detail_find_bar_and_filter_read_in_every_theme(tmp_path, case):
    from .test_ui_training import episode_with_training, open_training_tab

    size, half = case
    app = replay_app(episode_with_training(tmp_path))
    async with app.run_test(size=size) as pilot:
        await open_training_tab(pilot)
        app.screen.timeline.go_to_event(2)
        views = ((("5",), "training tab", ()), (("enter",), "detail", ("escape",)),
                 (("slash", *"region"), "find bar", ("escape", "escape")), (("f",), "filter", ("escape",)))  # fmt: skip
        found = await every_theme(pilot, f"episode {size}", views, half)
    assert not found, report(found)


@pytest.mark.usefixtures("standin_sandboxes")
async def test_a_live_episode_reads_in_every_theme(tmp_path):
    """A real episode (the stand-in OpenCode in a bubblewrap sandbox, the replay model): its live
    timeline while it runs, then its stages and outcome once it has ended."""
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.episode import EpisodeScreen

    from .test_ui_live import back_to_stages, live_screen, spec_for

    app = LiveApp(spec_for(SAMPLES / "clean_pass.jsonl", tmp_path / "runs"))
    app.animation_level = "none"
    found = []
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 240, what="the live timeline")
        await wait_for(pilot, lambda: not live_screen(app).running, 120, what="the episode's end")
        found += await every_theme(pilot, "live timeline (160, 45)")
        await back_to_stages(pilot, app)
        await pilot.pause(0.2)
        found += await every_theme(pilot, "live stages (160, 45)")
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        found += await every_theme(pilot, "live stages (80, 24)")
        await pilot.press("q")
    assert not found, report(found)


@pytest.mark.usefixtures("standin_sandboxes")
async def test_a_batch_grid_reads_in_every_theme(tmp_path):
    """Two real episodes of a batch (the stand-in OpenCode in bubblewrap, the replay model), their grid once ended."""
    from smoldata_tui.tasks import default_task_root, load_task
    from smoldata_tui.ui.apps.batch import BatchApp

    from .test_ui_batch import replay_batch_plan

    task = load_task(default_task_root() / "sales-top-region")
    app = BatchApp(replay_batch_plan(task, SAMPLES / "clean_pass.jsonl", tmp_path / "runs", attempts=2, concurrency=2,
                                     timeout_s=300))  # fmt: skip
    app.animation_level = "none"
    async with app.run_test(size=(160, 45)) as pilot:
        grid = app.grid
        await wait_for(pilot, lambda: grid.ended.is_set() and not grid.running, 300, what="the batch's end")
        await pilot.pause(0.5)
        found = await every_theme(pilot, "batch grid (160, 45)")
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        found += await every_theme(pilot, "batch grid (80, 24)")
    assert not found, report(found)
