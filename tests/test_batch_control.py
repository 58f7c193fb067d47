"""Acting on a running batch (``session/batch.py``): more or fewer at once while it runs, and an
attempt that errored run again. Real Episodes in real bubblewrap sandboxes; each fails at "stage
task" after a short wait (its pull_bucket.py sleeps, then fails), so no agent is needed: what is
tested is the scheduling."""

from __future__ import annotations

import json
import threading
import time

from smoldata_tui.session.batch import Batch, BatchPlan
from smoldata_tui.tasks import load_task

from .conftest import SAMPLES
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import sandboxes  # noqa: F401 - a fixture
from .test_tasks_load import write_task
from .test_ui_batch import replay_batch_plan


def _plan(tmp_path, attempts: int, concurrency: int) -> BatchPlan:
    task = load_task(write_task(tmp_path / "tasks", "slow-fail", files={
        "environment/pull_bucket.py": "import sys, time\ntime.sleep(1.5)\nsys.exit('the bucket is gone')\n"}))  # fmt: skip
    return replay_batch_plan(task, SAMPLES / "clean_pass.jsonl", tmp_path / "runs", attempts=attempts,
                             concurrency=concurrency, timeout_s=120)  # fmt: skip


class Watcher:
    """Which episodes run at once, and what to do when one ends."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.most = 0
        self.log: list[str] = []
        self.on_end = None
        self.lock = threading.Lock()

    def episode_started(self, run) -> None:
        with self.lock:
            self.running.add(run.key)
            self.most = max(self.most, len(self.running))
            self.log.append(f"start {run.key}")

    def episode_ended(self, run) -> None:
        with self.lock:
            self.running.discard(run.key)
            self.log.append(f"end {run.key} {run.outcome.status}")
        if self.on_end is not None:
            self.on_end(run)


def test_concurrency_grows_while_it_runs_and_an_errored_attempt_runs_again(tmp_path, sandboxes, opencode_bin):
    watcher = Watcher()
    batch = Batch(_plan(tmp_path, attempts=4, concurrency=1), watcher)
    refusals: list[str | None] = []

    def on_end(run) -> None:
        if run.key == "slow-fail-1" and not refusals:
            refusals.append(batch.requeue("slow-fail-2"))  # running or queued: refused
            refusals.append(batch.requeue("slow-fail-1"))  # ended in error: queued again
            batch.set_concurrency(3)

    watcher.on_end = on_end
    report = batch.run()
    assert refusals[0] and "has not ended" in refusals[0] and refusals[1] is None
    assert watcher.most == 3  # 1 at once until it grew, then three
    assert watcher.log.count("start slow-fail-1") == 2 and watcher.log[-1].endswith("error")
    assert report["episodes"] == 4 and [row["attempt"] for row in report["failed"]] == [1, 2, 3, 4]
    saved = json.loads((batch.folder / "batch.json").read_text())
    assert saved["requeued"] == {"slow-fail-1": 1} and saved["concurrency"] == 3
    assert [row["folder"] for row in saved["runs"]] == [f"slow-fail-{n}" for n in (1, 2, 3, 4)]
    kept = batch.folder / ".requeued" / "slow-fail-1-try1" / "run.meta.json"
    assert json.loads(kept.read_text())["status"] == "error"  # the first try is kept, out of the fleet's sight
    # After the end too: the attempt waits for run(), which runs it and saves the batch's end again.
    assert batch.requeue("slow-fail-1") is None and watcher.log.count("start slow-fail-1") == 2
    again = batch.run()
    assert watcher.log.count("start slow-fail-1") == 3 and watcher.log[-1] == "end slow-fail-1 error"
    assert again["episodes"] == 4 and [row["attempt"] for row in again["failed"]] == [1, 2, 3, 4]
    saved = json.loads((batch.folder / "batch.json").read_text())
    assert saved["requeued"] == {"slow-fail-1": 2} and saved["finished_at"] is not None
    assert (batch.folder / ".requeued" / "slow-fail-1-try2" / "run.meta.json").is_file()
    assert batch.requeue("slow-fail-2") is None and batch.requeue("slow-fail-3") is None  # two wait for one run()
    batch.run()
    assert watcher.log.count("start slow-fail-2") == 2 and watcher.log.count("start slow-fail-3") == 2


def test_fewer_at_once_takes_effect_for_the_next_ones_and_a_queued_cancel_ends_at_once(tmp_path, sandboxes, opencode_bin):
    watcher = Watcher()
    batch = Batch(_plan(tmp_path, attempts=4, concurrency=2), watcher)
    batch.set_concurrency(1)
    batch.cancel("slow-fail-4")
    started = time.monotonic()
    report = batch.run()
    assert watcher.most == 1
    assert watcher.log[0] == "end slow-fail-4 cancelled", watcher.log  # ended when cancelled, before any other started
    assert report["episodes"] == 4 and time.monotonic() - started < 100


async def test_the_grid_takes_more_at_once_and_requeues_the_attempt_under_the_cursor(tmp_path, sandboxes, opencode_bin):
    from smoldata_tui.ui.apps.batch import BatchApp

    from .test_ui_live import wait_for

    app = BatchApp(_plan(tmp_path, attempts=3, concurrency=1))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        grid = app.grid
        await pilot.press("plus")
        await wait_for(pilot, lambda: "2 at once" in str(grid.query_one("#batch-totals").render()), 10)
        assert grid.batch.concurrency == 2
        # A running episode's verdict column says so (its partial trace is no verdict), until it ends.
        await wait_for(pilot, lambda: str(grid.table.get_cell("slow-fail-1", "verdict")) == "running", 30)
        await wait_for(pilot, lambda: str(grid.table.get_cell("slow-fail-1", "stage")) == "error", 60)
        assert str(grid.table.get_cell("slow-fail-1", "verdict")) == ""  # it failed before any trace
        await pilot.press("r")  # the cursor is on the first row: it errored, so it runs again
        await pilot.pause(0.2)
        assert grid.batch.runs[0].outcome.state in ("queued", "running")
        await wait_for(pilot, lambda: not grid.running, 100)
        saved = json.loads((grid.batch.folder / "batch.json").read_text())
        assert saved["requeued"] == {"slow-fail-1": 1} and saved["concurrency"] == 2


async def test_after_the_end_r_reruns_a_failed_attempt_and_the_keys_that_cannot_act_leave(tmp_path, sandboxes, opencode_bin):
    from smoldata_tui.ui.apps.batch import BatchApp
    from smoldata_tui.ui.screens.catalogue import catalogue_for

    from .test_ui_live import wait_for

    def shown(app) -> str:
        return "\n".join(strip.text for strip in app.screen._compositor.render_strips())

    app = BatchApp(_plan(tmp_path, attempts=2, concurrency=2))
    async with app.run_test(size=(200, 30), notifications=True) as pilot:
        grid = app.grid
        assert "Cancel this episode" in shown(app)
        await wait_for(pilot, lambda: not grid.running, 100)
        await pilot.pause(0.2)
        # nothing was graded (each failed at "stage task"): pass@k is unknown, not 0
        assert json.loads((grid.batch.folder / "batch.json").read_text())["tasks"]["slow-fail"]["pass_at"] == {
            "1": None, "2": None}  # fmt: skip
        assert "pass@k unknown: no attempt was graded" in str(grid.query_one("#batch-totals").render())
        footer = shown(app).splitlines()[-1]
        assert "Cancel" not in footer and "at once" not in footer and "Run this attempt again" in footer, footer
        helped = [entry.description for entry in catalogue_for(grid)]
        assert not [d for d in helped if "Cancel" in d or "at once" in d] and any("again" in d for d in helped), helped
        await pilot.press("r")  # the cursor is on the first row, which errored: the batch's runner starts again
        await wait_for(pilot, lambda: grid.running, 5)
        assert "Cancel this episode" in shown(app).splitlines()[-1]
        await wait_for(pilot, lambda: grid.batch.runs[0].outcome.state == "running", 30)
        await wait_for(pilot, lambda: not grid.running, 100)
        assert grid.batch.runs[0].outcome.status == "error" and grid.summary is not None
        saved = json.loads((grid.batch.folder / "batch.json").read_text())
        assert saved["requeued"] == {"slow-fail-1": 1} and saved["finished_at"] is not None
        assert (grid.batch.folder / ".requeued" / "slow-fail-1-try1" / "run.meta.json").is_file()
        assert (grid.batch.folder / "slow-fail-1" / "run.meta.json").is_file()
