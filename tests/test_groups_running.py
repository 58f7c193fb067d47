"""A batch's attempt groups read while it runs (the grid's ``a`` mid-batch): real episodes, the
stand-in OpenCode in bubblewrap answered by the replay model with an agent that sleeps in its first
call. Attempt 2 is cancelled while 1 and 3 still run: the group keeps batch order, and the running
attempts are running (no reward, no verdict), not rejected by the wrapper."""

from __future__ import annotations

import json
import os
import threading
import time

from smoldata_tui.fleet.groups import flags, folder_groups
from smoldata_tui.session.batch import Batch
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.ui.screens.groups import rewards_text

from .test_episode_local import _sleeping_recording, processes_matching
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_ui_batch import replay_batch_plan


def wait_until(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_running_attempt_keeps_its_place_and_is_running_not_rejected(tmp_path, standin_sandboxes):
    marker = f"groups-sleeper-{os.getpid()}"
    recording = _sleeping_recording(tmp_path, marker=marker)
    task = load_task(default_task_root() / "sales-top-region")
    batch = Batch(replay_batch_plan(task, recording, tmp_path / "runs", attempts=3, concurrency=2, timeout_s=400))
    runner = threading.Thread(target=batch.run, daemon=True)
    runner.start()
    try:
        wait_until(lambda: len(processes_matching(marker)) >= 2, 300)  # attempts 1 and 2 asleep
        batch.cancel("sales-top-region-2")  # it ends; attempt 3 starts, after it in batch order
        wait_until(lambda: batch.runs[1].outcome.state == "ended", 120)
        wait_until(lambda: len(processes_matching(marker)) >= 2 and batch.runs[2].trace_path is not None, 300)
        saved = json.loads((batch.folder / "batch.json").read_text())
        assert [row["folder"] for row in saved["runs"]] == [f"sales-top-region-{n}" for n in (1, 2, 3)]

        (group,) = folder_groups(batch.folder)
        assert [os.path.basename(os.path.dirname(path)) for path in group.to_json()["episodes"]] == [
            "sales-top-region-1", "sales-top-region-2", "sales-top-region-3"]  # fmt: skip
        assert group.running == [0, 2] and group.to_json()["running"] == [0, 2]
        assert group.rejected == [1]  # the cancelled attempt's cut trace: the wrapper does reject it
        assert group.rewards == [None, None, None] and group.failing == [1]
        assert rewards_text(group) == "… · …"
        said = flags(group)
        # attempts count from 0 and a batch's folders from 1: each is named by its folder
        assert "attempt 0 [sales-top-region-1], 2 [sales-top-region-3] running" in said, said
        assert "wrapper rejects attempt 1 [sales-top-region-2] (None)" in said, said
    finally:
        batch.cancel_all("test over")
        runner.join(180)
    assert not runner.is_alive() and processes_matching(marker) == []
