"""Batches end to end through the command line, with real parts: OpenCode in bubblewrap (or in the
local Daytona server's sandboxes, through the real SDK), a scripted endpoint where every
second session of a task answers wrong (tests/scripted_endpoint.py), the real sample tasks and
graders. The issue's judging: 2 tasks × 2 attempts at concurrency 4 → 4 graded, per task 1 of 2
passed, pass@1 0.5, pass@2 1.0, each saved trace's verdict the seed rule's, the key in no saved
file, nothing left running. Every test runs the stand-in OpenCode (tests/standin_agent), locally and
in the Daytona server's image: they are about our batch code, not about OpenCode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace.seed_rule import seed_outcome

from .conftest import ROOT
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .scripted_endpoint import ScriptedEndpoint, answer_recording, correct_answer
from .test_episode_local import processes_matching

KEY = "sk-batch-secret-5b7e1c0d9a"
TASKS = ("sales-top-region", "employees-median-salary")


@pytest.fixture
def endpoint():
    scripts = []
    for name in TASKS:
        task = load_task(default_task_root() / name)
        right = correct_answer(task)
        scripts.append((task, [(f"{name[:5]}ok", answer_recording(f"{name[:5]}ok", right)),
                               (f"{name[:5]}no", answer_recording(f"{name[:5]}no", "not-the-answer"))]))  # fmt: skip
    server = ScriptedEndpoint(KEY, scripts)
    yield server
    server.close()


def batch_command(tmp_path: Path, endpoint: ScriptedEndpoint, opencode_cache: Path, *extra: str) -> tuple[list[str], dict]:
    """The batch's command and environment; its OpenCode cache is a link to ``opencode_cache``."""
    command = [sys.executable, "-m", "smoldata_tui", "run", *[arg for name in TASKS for arg in ("--task", name)],
               "--attempts", "2", "--concurrency", "4", "--model", "replay", "--save", str(tmp_path / "runs"),
               "--timeout", "400", "--headless", *extra]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "SANDBOX_VLLM_URL": endpoint.url, "SANDBOX_VLLM_KEY": KEY}  # fmt: skip
    (tmp_path / "cache" / "smoldata-tui").mkdir(parents=True)
    (tmp_path / "cache" / "smoldata-tui" / "opencode").symlink_to(opencode_cache)
    return command, env


def assert_judged(done: subprocess.CompletedProcess, endpoint: ScriptedEndpoint, tmp_path: Path) -> dict:
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    keys = {f"{name}-{attempt}" for name in TASKS for attempt in (1, 2)}
    assert {line.split()[1] for line in lines if line.startswith("[start] ")} == keys
    assert {line.split()[1] for line in lines if line.startswith("[end] ")} == keys
    assert summary["episodes"] == 4 and summary["failed"] == [] and summary["wall_s"] > 0
    for name in TASKS:
        assert summary["tasks"][name] == {"attempts": 2, "graded": 2, "passed": 1, "pass_at": {"1": 0.5, "2": 1.0},
                                          "verdicts": {"accepted": 2, "rejected": 0, "crashes": 0}}  # fmt: skip
        assert len(endpoint.sessions[name]) == 2 and len(set(endpoint.sessions[name])) == 2  # one right, one wrong
    batch = Path(summary["batch"])
    saved = json.loads((batch / "batch.json").read_text())
    assert saved["tasks"] == summary["tasks"] and saved["finished_at"]
    rewards = {}
    for row in saved["runs"]:
        trace = (batch / row["folder"] / "run.jsonl").read_bytes()
        seed = seed_outcome(trace)  # the seed's rule on what was saved
        assert seed.crash is None and seed.calls == row["native_tool_calls"] == 1 and row["verdict"] == "accepted"
        meta = json.loads((batch / row["folder"] / "run.meta.json").read_text())
        assert meta["grade"]["env_reward"] == row["env_reward"] and meta["task"] == row["task"]
        rewards.setdefault(row["task"], []).append(row["env_reward"])
    assert {name: sorted(values) for name, values in rewards.items()} == {name: [0.0, 1.0] for name in TASKS}
    for path in tmp_path.joinpath("runs").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in done.stdout + done.stderr
    assert endpoint.refused == 0
    assert processes_matching(str(tmp_path)) == []  # no sandbox, agent or proxy of ours left
    return summary


def test_two_tasks_two_attempts_at_concurrency_four_locally(tmp_path, endpoint, standin_opencode):
    command, env = batch_command(tmp_path, endpoint, standin_opencode.parents[2])
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert_judged(done, endpoint, tmp_path)
    sandboxes = tmp_path / "cache" / "smoldata-tui" / "sandboxes"
    assert not sandboxes.exists() or list(sandboxes.glob("sbx-*")) == []


def test_the_same_on_daytona_with_429s_on_creates(tmp_path, endpoint, local_daytona, standin_opencode):
    local_daytona.fail_next(3, 429, path_contains="/api/sandbox", method="POST")  # the rate limiter refuses creates at first
    command, env = batch_command(tmp_path, endpoint, standin_opencode.parents[2], "--backend", "daytona", "--no-capture")
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert_judged(done, endpoint, tmp_path)
    assert local_daytona.sandbox_ids() == []  # every sandbox deleted
    assert sum(1 for method, path, status in local_daytona.requests if status == 429) == 3


def test_sigterm_cancels_every_episode_and_releases_every_sandbox(tmp_path, standin_opencode):
    sleepy = tmp_path / "sleepy.jsonl"
    sleep_s = 300 + (os.getpid() % 997 + 1) / 1000  # `sleep 300.xyz`: this test's agent alone among the host's processes
    marker = f"sleep {sleep_s:g}"
    sleepy.write_bytes(answer_recording("sleepy", "West", sleep_s=sleep_s))
    command = [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--attempts", "2",
               "--concurrency", "1", "--model", f"replay:{sleepy}", "--save", str(tmp_path / "runs"),
               "--timeout", "400", "--headless", "--no-capture"]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    (tmp_path / "cache" / "smoldata-tui").mkdir(parents=True)
    (tmp_path / "cache" / "smoldata-tui" / "opencode").symlink_to(standin_opencode.parents[2])
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not processes_matching(marker) and time.monotonic() < deadline:  # the first agent is in its call
        time.sleep(0.5)
    assert processes_matching(marker)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    statuses = {row["attempt"]: (row["status"], row["why"]) for row in summary["failed"]}
    assert [statuses[n][0] for n in (1, 2)] == ["cancelled", "cancelled"]
    assert statuses[2][1].startswith("cancelled before it started")  # the queued one never started
    assert "stopped by SIGTERM" in err
    assert processes_matching(marker) == [] and processes_matching(str(tmp_path)) == []
    assert list((tmp_path / "cache" / "smoldata-tui" / "sandboxes").glob("sbx-*")) == []
    meta = json.loads((Path(summary["batch"]) / "sales-top-region-1" / "run.meta.json").read_text())
    assert meta["status"] == "cancelled" and meta["stop_reason"] == "SIGTERM"
    assert not (Path(summary["batch"]) / "sales-top-region-2").exists()
