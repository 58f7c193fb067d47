"""The groups a GRPO-style trainer learns from (``fleet/groups.py``, ``diff/group_split.py``) and
``check --groups``, on episode folders written as ``smoldata-tui run`` writes them.

The end-to-end batch against a scripted endpoint is in ``test_groups_batch.py``."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from smoldata_tui.fleet.groups import group_episodes
from smoldata_tui.fleet.work import analyze_trace
from smoldata_tui.store.metadata import EpisodeMetadata, Grade
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.trace.build import TraceBuilder

from .conftest import SAMPLES

MODEL = "Qwen/Qwen3.5-4B"


def _trace(step_two: str, *, repeat_id: bool = False) -> bytes:
    """Step 1 lists the input; step 2 runs ``step_two``; step 3 ends."""
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("ls /home/user/input", "sales.csv\n", call_id="call_a")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.bash(step_two, "", call_id="call_a" if repeat_id else "call_b")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    return builder.dumps()


RIGHT = "python3 -c 'import csv; print(max(csv.reader(open(\"/home/user/input/sales.csv\"))))' > /workdir/answer.txt"
WRONG = "echo East > /workdir/answer.txt"


def _episode(folder: Path, task: str, reward: float | None, trace: bytes, *, started: str = "2026-12-04T10:00:00Z",
             model: str = MODEL) -> Path:  # fmt: skip
    folder.mkdir(parents=True)
    (folder / "run.jsonl").write_bytes(trace)
    grade = Grade(env_reward=reward, correctness=reward, grader_error=None if reward is not None else "crashed")
    save_metadata(folder / "run.meta.json", EpisodeMetadata(task=task, model=model, started_at=started,
                                                            status="finished", grade=grade, trace="run.jsonl"))  # fmt: skip
    return folder / "run.jsonl"


def _batch(folder: Path, episodes: list[tuple[str, int, float | None, bytes]]) -> None:
    """A batch folder whose batch.json lists ``episodes`` (task, attempt, reward, trace) in that order;
    the folders are made in reverse so the order can come only from batch.json."""
    rows = []
    for task, attempt, reward, trace in reversed(episodes):
        _episode(folder / f"{task}-{attempt}", task, reward, trace, started=f"2026-12-04T10:0{9 - attempt}:00Z")
    for task, attempt, reward, _ in episodes:
        rows.append({"task": task, "attempt": attempt, "state": "ended", "env_reward": reward, "folder": f"{task}-{attempt}"})
    (folder / "batch.json").write_text(json.dumps({"runs": rows}))


def _groups(folder: Path):
    summaries = [analyze_trace(str(path), with_metadata=True)[1] for path in sorted(folder.rglob("run.jsonl"))]
    return {group.task: group for group in group_episodes(summaries)}


def test_a_group_has_trls_statistics_in_batch_order_and_its_first_split(tmp_path):
    _batch(tmp_path / "batch", [
        ("sales", 0, 1.0, _trace(RIGHT)),
        ("sales", 1, 0.0, _trace(WRONG)),
        ("sales", 2, 1.0, _trace(RIGHT, repeat_id=True)),  # right, but the wrapper rejects its trace
        ("sales", 3, 0.0, _trace(WRONG)),
    ])  # fmt: skip
    group = _groups(tmp_path / "batch")["sales"]
    assert group.rewards == [1.0, 0.0, 1.0, 0.0]  # batch.json's order, not the folders' names or times
    assert group.mean == 0.5
    assert group.std == pytest.approx(math.sqrt(1 / 3))  # sample std (n - 1), as torch.std
    assert group.advantages == [0.5, -0.5, 0.5, -0.5]
    scaled = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    assert group.advantages_scaled == pytest.approx([scaled, -scaled, scaled, -scaled])
    assert group.zero_variance is False
    assert group.rejected == [2]
    from smoldata_tui.fleet.groups import add_first_splits

    add_first_splits([group])
    assert group.first_split["step"] == 2  # step 1 is the same on both sides
    assert group.first_split["passing"] == ["bash"] and group.first_split["failing"] == ["bash"]
    assert any("echo East" in call for call in group.first_split["failing_calls"])


def test_equal_rewards_and_a_group_of_one_have_no_learning_signal(tmp_path):
    _batch(tmp_path / "batch", [("all-pass", 0, 1.0, _trace(RIGHT)), ("all-pass", 1, 1.0, _trace(RIGHT)),
                                ("alone", 0, 0.0, _trace(WRONG))])  # fmt: skip
    groups = _groups(tmp_path / "batch")
    both = groups["all-pass"]
    assert both.zero_variance and both.std == 0.0 and both.advantages == [0.0, 0.0]
    alone = groups["alone"]
    assert alone.zero_variance and alone.std == 0.0 and alone.mean == 0.0


def test_an_ungraded_attempt_has_no_reward_and_counts_as_failing(tmp_path):
    _batch(tmp_path / "batch", [("t", 0, 1.0, _trace(RIGHT)), ("t", 1, None, _trace(WRONG)), ("t", 2, 0.0, _trace(WRONG))])
    group = _groups(tmp_path / "batch")["t"]
    assert group.rewards == [1.0, None, 0.0]
    assert group.mean == 0.5 and group.advantages == [0.5, None, -0.5]
    assert group.failing == [1, 2]


def test_outside_a_batch_attempts_go_by_start_time_and_models_make_separate_groups(tmp_path):
    _episode(tmp_path / "b", "t", 0.0, _trace(WRONG), started="2026-12-04T11:00:00Z")
    _episode(tmp_path / "a", "t", 1.0, _trace(RIGHT), started="2026-12-04T12:00:00Z")
    _episode(tmp_path / "c", "t", 1.0, _trace(RIGHT), started="2026-12-04T10:00:00Z", model="other/model")
    summaries = [analyze_trace(str(path), with_metadata=True)[1] for path in sorted(tmp_path.rglob("run.jsonl"))]
    groups = group_episodes(summaries)
    assert [(group.model, group.rewards) for group in groups] == [(MODEL, [0.0, 1.0]), ("other/model", [1.0])]


def test_check_groups_json_is_the_last_line_and_the_table_says_the_flags(tmp_path, cli):
    _batch(tmp_path / "batch", [("sales", 0, 1.0, _trace(RIGHT)), ("sales", 1, 0.0, _trace(WRONG)),
                                ("same", 0, 0.0, _trace(WRONG)), ("same", 1, 0.0, _trace(WRONG))])  # fmt: skip
    done = cli("check", "--groups", "--json", str(tmp_path / "batch"))
    assert done.returncode == 0, done.stderr
    *rows, last = done.stdout.splitlines()
    assert len(rows) == 4
    groups = {group["task"]: group for group in json.loads(last)["groups"]}
    sales = groups["sales"]
    assert set(sales) >= {"task", "model", "attempts", "rewards", "mean", "std", "advantages", "advantages_scaled",
                          "zero_variance", "rejected", "first_split"}  # fmt: skip
    assert (sales["attempts"], sales["rewards"], sales["rejected"]) == (2, [1.0, 0.0], [])
    assert sales["first_split"]["step"] == 2 and sales["first_split"]["passing"] == ["bash"]
    assert groups["same"]["zero_variance"] is True and groups["same"]["first_split"] is None
    table = cli("check", "--groups", str(tmp_path / "batch"))
    assert table.returncode == 0, table.stderr
    assert "no learning signal" in table.stdout and "step 2" in table.stdout
    # Most learning signal first: the split group's row comes before the one that teaches nothing.
    assert table.stdout.index("sales") < table.stdout.index("same")


def test_every_episode_has_a_signature_and_the_summary_counts_them_cold_and_cached(tmp_path, cli):
    _batch(tmp_path / "batch", [("t", 0, 1.0, _trace(RIGHT)), ("t", 1, 0.0, _trace(WRONG)),
                                ("t", 2, 1.0, _trace(RIGHT, repeat_id=True)), ("t", 3, 0.0, _trace(WRONG))])  # fmt: skip
    (tmp_path / "batch" / "t-9").mkdir()
    (tmp_path / "batch" / "t-9" / "run.jsonl").symlink_to(tmp_path / "nowhere.jsonl")  # unreadable
    expected = {"clean · finished · last bash · pass": 1, "clean · finished · last bash · fail": 2,
                "duplicate_call_id · finished · last bash · pass": 1, "unreadable": 1}  # fmt: skip
    for path in (tmp_path / "batch").rglob("*"):  # older than the cache's 2 s: the second run is served from it
        if path.is_file():
            os.utime(path, (path.stat().st_atime - 60, path.stat().st_mtime - 60))
    for attempt in ("cold", "cached"):
        done = cli("check", "--summary", "--json", str(tmp_path / "batch"))
        assert json.loads(done.stdout.splitlines()[-1])["signatures"] == expected, attempt


def test_the_groups_table_tells_a_crash_from_a_rejection(tmp_path, cli):
    crash = (SAMPLES / "wrapper_crash_state_null.jsonl").read_bytes()
    _batch(tmp_path / "batch", [("sales", 0, 1.0, _trace(RIGHT)), ("sales", 1, 0.0, crash),
                                ("sales", 2, 1.0, _trace(RIGHT, repeat_id=True))])  # fmt: skip
    table = cli("check", "--groups", str(tmp_path / "batch"))
    assert table.returncode == 1, table.stderr  # a trace is rejected, another would crash the wrapper
    assert "wrapper would crash on attempt 1 [sales-1]" in table.stdout  # each named by its folder
    assert "wrapper rejects attempt 2 [sales-2] (None)" in table.stdout
