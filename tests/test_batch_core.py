"""The batch's core without real agents: pass@k, the per-task totals, batch.json, usage errors,
one failed or cancelled episode among others, the OpenCode install under threads and the
Daytona backoff shared by every call after a 429."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from math import comb
from pathlib import Path

import pytest

from smoldata_tui.cli import main
from smoldata_tui.session.batch import Batch, BatchPlan
from smoldata_tui.store.batch_summary import EpisodeOutcome, summary, task_totals, write_batch_file
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.opencode.install import ensure_opencode
from smoldata_tui.store.pass_at import pass_at_all, pass_at_k
from smoldata_tui.tasks import default_task_root, load_task

from .conftest import SAMPLES
from .test_opencode_install import fake_npm  # noqa: F401 - a fixture


def brute_force_pass_at(n: int, c: int, k: int) -> float:
    """Over every k-subset of n attempts (c of them passing): the share holding a pass."""
    from itertools import combinations

    attempts = [True] * c + [False] * (n - c)
    subsets = list(combinations(attempts, k))
    return sum(any(subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 7))
def test_pass_at_k_is_the_unbiased_estimator(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at(n, c, k))
            if n - c >= k:
                assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_pass_at_k_of_the_judging_and_its_bounds():
    assert pass_at_all(2, 1) == {"1": 0.5, "2": 1.0}
    assert pass_at_all(3, 0) == {"1": 0.0, "2": 0.0, "3": 0.0}
    assert pass_at_all(4, 1)["2"] == 0.5
    for bad in ((2, 3, 1), (2, 1, 0), (2, 1, 3), (0, 0, 1)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_totals_count_verdicts_and_an_ungraded_attempt_as_not_passed():
    outcomes = [
        EpisodeOutcome("a", 1, state="ended", status="finished", env_reward=1.0, verdict="accepted"),
        EpisodeOutcome("a", 2, state="ended", status="finished", env_reward=0.0, verdict="rejected"),
        EpisodeOutcome("a", 3, state="ended", status="error", why="create sandbox: boom"),
        EpisodeOutcome("b", 1, state="ended", status="timeout", env_reward=0.0, verdict="crashes"),
    ]
    report = summary(outcomes, 12.3456)
    assert report["episodes"] == 4 and report["wall_s"] == 12.346
    assert report["tasks"]["a"] == {"attempts": 3, "graded": 2, "passed": 1,
                                    "pass_at": {"1": pytest.approx(1 / 3), "2": pytest.approx(2 / 3), "3": 1.0},
                                    "verdicts": {"accepted": 1, "rejected": 1, "crashes": 0}}  # fmt: skip
    assert report["tasks"]["b"]["verdicts"] == {"accepted": 0, "rejected": 0, "crashes": 1}
    assert report["failed"] == [{"task": "a", "attempt": 3, "status": "error", "why": "create sandbox: boom", "folder": None}]
    assert list(task_totals(outcomes)) == ["a", "b"]


def test_pass_at_k_with_nothing_graded_is_unknown_and_the_grid_says_how_ungraded_ones_count():
    from smoldata_tui.ui.screens.batch import pass_at_text

    cancelled = [EpisodeOutcome("a", n, state="ended", status="cancelled", why="q (quit)") for n in (1, 2)]
    report = summary(cancelled, 1.0)
    assert report["tasks"]["a"]["pass_at"] == {"1": None, "2": None}  # unknown, not 0.0
    assert pass_at_text(report["tasks"]["a"]) == "pass@k unknown: no attempt was graded"
    mixed = summary([EpisodeOutcome("b", 1, state="ended", status="finished", env_reward=1.0),
                     EpisodeOutcome("b", 2, state="ended", status="finished", env_reward=0.0),
                     EpisodeOutcome("b", 3, state="ended", status="finished", env_reward=0.0),
                     EpisodeOutcome("b", 4, state="ended", status="cancelled", why="c")], 1.0)["tasks"]["b"]  # fmt: skip
    said = pass_at_text(mixed)  # 1/4 for pass@k, 1/3 in the fleet table: the grid says why they differ
    assert said.startswith("pass@1 0.25 pass@2 0.50") and "1 not graded, counted as failed" in said
    assert "pass rate 1/3 is over the graded ones" in said


def test_batch_file_is_replaced_whole(tmp_path):
    write_batch_file(tmp_path, {"n": 1})
    write_batch_file(tmp_path, {"n": 2})
    assert json.loads((tmp_path / "batch.json").read_text()) == {"n": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["batch.json"]  # no temporary left


@pytest.mark.parametrize("argv, message", [
    (["--task", "sales-top-region", "--attempts", "0"], "--attempts must be at least 1, not 0"),
    (["--task", "sales-top-region", "--attempts", "2", "--concurrency", "0"], "--concurrency must be at least 1"),
    (["--all", "--task", "sales-top-region"], "do not also name tasks"),
    (["--task", "sales-top-region", "--task", "sales-top-region"], "use --attempts K"),
    (["--attempts", "2"], "pass --task NAME"),
    (["--task", "sales-top-region", "--task", "no-such-task"], "no task 'no-such-task'"),
])  # fmt: skip
def test_usage_errors_exit_2_with_one_line_and_make_no_folder(tmp_path, capsys, argv, message):
    status = main(["run", *argv, "--headless", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}",
                   "--save", str(tmp_path / "runs")])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []


def test_a_failing_episode_stops_no_other_and_a_cancelled_one_never_starts(tmp_path):
    """Real Episodes on a backend that does not exist: each fails at "create sandbox" at once."""
    task = load_task(default_task_root() / "sales-top-region")

    def endpoint():
        return open_endpoint(model=f"replay:{SAMPLES / 'clean_pass.jsonl'}")

    template = EpisodeSpec(task=task, endpoint=endpoint(), backend="nowhere", save_dir=tmp_path, capture=False)
    template.endpoint.close()
    seen: list[str] = []

    class Observer:
        def episode_started(self, run):
            seen.append(f"start {run.key}")

        def episode_ended(self, run):
            seen.append(f"end {run.key}")

    batch = Batch(BatchPlan([task], attempts=3, concurrency=1, template=template, open_endpoint=endpoint), Observer())
    batch.cancel("sales-top-region-2")
    report = batch.run()
    assert report["tasks"]["sales-top-region"]["graded"] == 0
    failed = {row["attempt"]: row for row in report["failed"]}
    assert "unknown backend 'nowhere'" in failed[1]["why"] and "unknown backend" in failed[3]["why"]
    assert failed[2]["why"].startswith("cancelled before it started") and failed[2]["folder"] is None
    # A queued episode that is cancelled ends at once, before the batch starts the others.
    assert seen == ["end sales-top-region-2", "start sales-top-region-1", "end sales-top-region-1",
                    "start sales-top-region-3", "end sales-top-region-3"]  # fmt: skip
    saved = json.loads((batch.folder / "batch.json").read_text())
    assert saved["finished_at"] and [row["state"] for row in saved["runs"]] == ["ended"] * 3
    assert sorted(p.name for p in batch.folder.iterdir()) == ["batch.json", "sales-top-region-1", "sales-top-region-3"]
    assert json.loads((batch.folder / "sales-top-region-1" / "run.meta.json").read_text())["status"] == "error"


def test_threads_installing_opencode_at_once_install_once(tmp_path, fake_npm):  # noqa: F811
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(ensure_opencode("9.9.8", cache_dir=tmp_path / "c")))
               for _ in range(4)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [tmp_path / "c" / "9.9.8" / "bin" / "opencode"] * 4
    assert len(fake_npm.read_text().splitlines()) == 1


def test_a_429_holds_back_every_daytona_call_of_the_process():
    from daytona import DaytonaRateLimitError

    from smoldata_tui.sandbox.daytona import retry

    sent: dict[str, list[float]] = {"limited": [], "other": []}

    async def limited():
        sent["limited"].append(time.monotonic())
        if len(sent["limited"]) == 1:
            raise DaytonaRateLimitError("too many requests")
        return "ok"

    async def other():
        sent["other"].append(time.monotonic())
        return "ok"

    async def both():
        first = asyncio.create_task(retry.retrying("create", limited, budget_s=30, notify=lambda _m: None))
        await asyncio.sleep(0.05)  # the 429 has been seen: the other episode's call must wait
        second = await retry.retrying("exec", other, budget_s=30, notify=lambda _m: None)
        return await first, second

    start = time.monotonic()
    assert asyncio.run(both()) == ("ok", "ok")
    assert sent["other"][0] - start >= retry.FIRST_DELAY_S * 0.9  # held back by the other call's 429
    assert retry.shared_backoff_left() == 0


def test_a_grid_row_reads_progress_as_the_trace_streams_in():
    from smoldata_tui.session.batch import EpisodeRun

    run = EpisodeRun(EpisodeOutcome("sales-top-region", 1))
    assert run.progress() == {"steps": 0, "calls": 0, "last_tool": None, "findings": 0, "verdict": None}
    data = (SAMPLES / "clean_pass.jsonl").read_bytes()
    lines = data.splitlines(keepends=True)
    run.received(b"".join(lines[:3]))
    partial = run.progress()
    run.received(b"".join(lines[3:]))
    assert partial["calls"] <= 3
    assert run.progress() == {"steps": 4, "calls": 3, "last_tool": "write", "findings": 0, "verdict": "accepted"}
    assert run.finish_analysis().verdict.native_tool_calls == 3
