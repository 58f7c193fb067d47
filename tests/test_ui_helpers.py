"""Shared helpers of the UI tests (imported by the other test_ui_* modules), and their own checks.

Every UI test drives the real ``ReplayApp`` with Pilot on a trace file it writes with
``TraceBuilder``, so what is asserted is what a user would see and do.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from textual.pilot import Pilot

from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.ui.apps.viewer import ReplayApp
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.timeline import Timeline

SIZE = (140, 36)


def replay_app(path: Path, **options) -> ReplayApp:
    """The real app, without animations (Pilot waits for every animation to end)."""
    app = ReplayApp(path, **options)
    app.animation_level = "none"
    return app


def small_episode() -> TraceBuilder:
    """Three steps: ls, a failing read, python with exit 1, then the answer. 12 events."""
    b = TraceBuilder()
    b.step_start()
    b.text("I'll start by looking at the input files.")
    b.bash("ls -la /home/user/input", "sales_2024.csv\n", description="List input files")
    b.step_finish("tool-calls")
    b.step_start()
    b.tool("read", {"filePath": "/home/user/input/nope.csv"}, status="error", error="File not found: nope.csv")
    b.bash("python3 -c 'import pandas'", "Traceback...\nModuleNotFoundError\n", exit_code=1, description="Try pandas")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("The answer is West.")
    b.tool("write", {"filePath": "/workdir/answer.txt", "content": "West\n"}, "Wrote file successfully.")
    b.step_finish("stop")
    return b


def write_trace(path: Path, builder: TraceBuilder) -> Path:
    path.write_bytes(builder.dumps())
    return path


async def wait_for(pilot: Pilot, condition, timeout: float = 30.0, what="condition") -> None:
    """Poll ``condition`` until it holds; ``what`` (a string or a callable giving one) names it."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        await pilot.pause(0.01)


def episode(app: ReplayApp) -> EpisodeScreen:
    screen = app.screen
    assert isinstance(screen, EpisodeScreen), type(screen)
    return screen


async def loaded(pilot: Pilot) -> EpisodeScreen:
    """Wait until the episode screen has read and finished its whole trace."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, EpisodeScreen), what="the episode screen")
    screen = episode(pilot.app)
    await wait_for(
        pilot,
        lambda: screen.finished,
        what=lambda: (
            f"the trace to be read (events {screen.model.count}, generation {screen.generation}, "
            f"workers {[(worker.name, worker.state.name) for worker in pilot.app.workers]})"
        ),
    )
    await pilot.pause()
    return screen


def timeline(app: ReplayApp) -> Timeline:
    return app.screen.query_one(Timeline)


def cursor_line(app: ReplayApp) -> int:
    """The 1-based trace line of the selected row."""
    view = timeline(app)
    return view.model.record(view.cursor_event).line


def detail_text(app: ReplayApp) -> str:
    return app.screen.query_one(DetailView).text


def screen_lines(app: ReplayApp) -> list[str]:
    """The whole screen as plain text, one string per terminal row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def terminal_output(app: ReplayApp) -> str:
    """Exactly what the app would write to the terminal to draw the current screen."""
    return app.screen._compositor.render_full_update().render_segments(app.console)


def test_small_episode_has_the_shape_the_tests_rely_on(tmp_path):
    path = write_trace(tmp_path / "t.jsonl", small_episode())
    assert path.read_bytes().count(b"\n") == 12


def test_wait_for_times_out_with_a_clear_message():
    class FakePilot:
        async def pause(self, delay=None):
            await asyncio.sleep(0)

    async def run():
        try:
            await wait_for(FakePilot(), lambda: False, timeout=0.01, what="nothing")
        except AssertionError as exc:
            return str(exc)

    assert asyncio.run(run()) == "timed out waiting for nothing"


def searched(screen, text: str) -> bool:
    """The search for the whole of ``text`` has finished: on a loaded machine the find bar's
    debounce can fire between keys, and a search for the first letters can finish first."""
    query = screen.search.query
    return query is not None and query.text == text and not screen.search.running
