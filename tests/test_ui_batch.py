"""The batch's live grid, driven by Pilot, with real episodes: the stand-in OpenCode (the test is
about our grid, not OpenCode) in bubblewrap, answered by the replay model with an agent that sleeps
in its first call."""

from __future__ import annotations

import json
import os

from smoldata_tui.fleet.work import analyze_trace
from smoldata_tui.session.batch import BatchPlan
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.ui.apps.batch import BatchApp, batch_exit_status
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.batch import BatchScreen
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.fleet import FleetScreen
from smoldata_tui.ui.screens.live import ConfirmCancel

from .test_episode_local import _sleeping_recording, processes_matching, sandbox_dirs
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_ui_live import wait_for


def replay_batch_plan(task, recording, runs, *, attempts: int, concurrency: int, timeout_s: float) -> BatchPlan:
    """A batch of ``task`` answered by the replay model of ``recording``, without capture."""
    def endpoint():
        return open_endpoint(model=f"replay:{recording}")

    template = EpisodeSpec(task=task, endpoint=endpoint(), timeout_s=timeout_s, save_dir=runs, capture=False)
    template.endpoint.close()
    return BatchPlan([task], attempts=attempts, concurrency=concurrency, template=template, open_endpoint=endpoint)


def cell(grid: BatchScreen, key: str, column: str) -> str:
    return str(grid.table.get_cell(key, column))


async def test_the_grid_follows_cancels_and_becomes_the_fleet_table(tmp_path, standin_sandboxes):
    marker = f"grid-sleeper-{os.getpid()}"  # ours alone: another run of the suite on this machine may sleep too
    recording = _sleeping_recording(tmp_path, marker=marker)
    task = load_task(default_task_root() / "sales-top-region")
    app = BatchApp(replay_batch_plan(task, recording, tmp_path / "runs", attempts=3, concurrency=2, timeout_s=400))
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        grid = app.grid
        assert isinstance(app.screen, BatchScreen)
        assert [cell(grid, f"sales-top-region-{n}", "stage") for n in (1, 2, 3)][2] == "queued"
        await pilot.press("question_mark")  # the grid lists its keys, as every screen does
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5)
        listed = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "Follow this episode" in listed and "Cancel every episode" in listed and "Attempt groups" in listed, listed
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is grid, 5)
        await wait_for(pilot, lambda: len(processes_matching(marker)) >= 2, 300)  # both agents asleep
        await pilot.pause(1.0)
        assert cell(grid, "sales-top-region-1", "stage") == "agent running"
        assert cell(grid, "sales-top-region-1", "last tool") == "bash" or cell(grid, "sales-top-region-1", "calls") == "0"
        totals = str(grid.query_one("#batch-totals").render())
        assert "3 episodes" in totals and "running 2" in totals and "queued 1" in totals

        await pilot.press("enter")  # follow the first episode's timeline
        assert isinstance(app.screen, EpisodeScreen) and app.screen.follow
        assert app.screen.path == grid.batch.runs[0].trace_path
        timeline = app.screen
        await pilot.press("K")  # a batch's episode is live too: K names its hung call and asks
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCancel), 30)
        assert f"sleep 300 && echo {marker}" in app.screen.question
        await pilot.press("n")  # let it run
        await wait_for(pilot, lambda: app.screen is timeline, 5)
        for _ in range(4):
            if app.screen is grid:
                break
            await pilot.press("escape")
            await pilot.pause(0.2)
        assert app.screen is grid

        await pilot.press("c")  # cancel the first episode only: the queued third one starts
        await wait_for(pilot, lambda: cell(grid, "sales-top-region-1", "stage") == "cancelled", 120)
        await wait_for(pilot, lambda: cell(grid, "sales-top-region-3", "stage") not in ("queued", ""), 120)
        assert cell(grid, "sales-top-region-2", "stage") == "agent running"

        await pilot.press("C")  # cancel every episode, after asking
        assert isinstance(app.screen, ConfirmCancel)
        assert str(app.screen.query_one("#yes").label) == "Cancel every episode (y)"  # as the question asks
        await pilot.press("y")
        await wait_for(pilot, lambda: grid.ended.is_set() and not grid.running, 180)
        assert app.screen is grid  # the grid stays, with each task's pass@k
        await pilot.pause(0.5)
        # all three were cancelled before a grade: pass@k is unknown, not 0
        assert "pass@k unknown: no attempt was graded" in str(grid.query_one("#batch-totals").render())
        await pilot.press("e")  # the fleet table over the batch folder, and back
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 30)
        assert app.screen.folder == grid.batch.folder
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is grid, 30)
        saved = json.loads((grid.batch.folder / "batch.json").read_text())
        assert [row["status"] for row in saved["runs"]] == ["cancelled"] * 3
        for run in grid.batch.runs:  # an ended row counts the findings the fleet row (and check) counts
            if run.trace_path is not None and run.trace_path.is_file():
                row = analyze_trace(str(run.trace_path), with_metadata=True)[1]
                assert cell(grid, run.key, "findings") == str(len(row.kinds)), (run.key, row.kinds)
        assert saved["runs"][0]["why"] and batch_exit_status(app) == 1
        assert processes_matching(marker) == []
        assert sandbox_dirs(standin_sandboxes) == []
        await pilot.press("q")
