"""A run whose process died without saving its end (SIGKILL, a crash) is shown as interrupted
everywhere, and ``smoldata-tui local gc`` removes what it left: its sandbox folder (which holds
the endpoint key) and processes, and marks its episode interrupted. The killed run's agent is the
stand-in OpenCode (tests/standin_agent): the test is about our metadata and gc, not OpenCode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoldata_tui.sandbox.processes import start_time
from smoldata_tui.store.metadata import EpisodeMetadata, effective_status
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.store.owner import owner_record
from smoldata_tui.replay.model_endpoint import REPLAY_API_KEY

from .conftest import ROOT
from .test_episode_local import processes_matching, sandbox_dirs, standin_sandboxes  # noqa: F401 - a fixture
from .test_episode_local import _sleeping_recording
from .test_live_exits import AGENT_START_S, _wait_for


def _dead_owner() -> dict:
    """The owner record of a process that has ended."""
    child = subprocess.Popen(["sleep", "30"])
    record = {**owner_record(), "pid": child.pid, "start_time": start_time(child.pid)}
    child.kill()
    child.wait()
    return record


def test_running_with_a_dead_owner_is_interrupted_and_nothing_else_is():
    assert effective_status(EpisodeMetadata(status="running", owner=_dead_owner())) == "interrupted"
    assert effective_status(EpisodeMetadata(status="running", owner=owner_record())) == "running"  # we live
    # A pid now used by another process (same pid, another start time) is not the owner.
    reused = {**owner_record(), "start_time": start_time(os.getpid()) - 1}
    assert effective_status(EpisodeMetadata(status="running", owner=reused)) == "interrupted"
    # Another machine's run, or a file without an owner (older writers): this machine cannot tell.
    elsewhere = {**_dead_owner(), "host": "some-other-host"}
    assert effective_status(EpisodeMetadata(status="running", owner=elsewhere)) == "running"
    assert effective_status(EpisodeMetadata(status="running")) == "running"
    assert effective_status(EpisodeMetadata(status="finished", owner=_dead_owner())) == "finished"


def test_a_run_that_took_the_lock_is_judged_by_its_lock_not_its_pid(tmp_path):
    from smoldata_tui.store.owner import hold_run_lock

    trace = tmp_path / "run.jsonl"
    meta = tmp_path / "run.meta.json"

    def status_with(owner: dict) -> str:
        save_metadata(meta, EpisodeMetadata(status="running", owner=owner, trace="run.jsonl"))
        return effective_status(load_metadata(meta))

    run_lock = hold_run_lock(trace)
    assert Path(run_lock.path) == tmp_path / "run.lock"
    # Held: alive, whatever the pid says (a run in another PID namespace records its own pid).
    assert status_with({**_dead_owner(), "lock": True}) == "running"
    assert status_with({**_dead_owner(), "lock": True, "host": "some-other-host"}) == "running"
    run_lock.release()
    assert not (tmp_path / "run.lock").exists()
    # The file gone with the lock: the run ended and removed it; not this reader's to call interrupted.
    assert status_with({**owner_record(), "lock": True}) == "running"
    # Left behind, free: its owner died without letting go, whatever pid it records (ours, alive).
    (tmp_path / "run.lock").touch()
    assert status_with({**owner_record(), "lock": True}) == "interrupted"
    assert status_with({**owner_record(), "lock": True, "host": "some-other-host"}) == "running"  # can't tell
    # A record without the lock (an older writer) is judged by its pid, as before.
    assert status_with(owner_record()) == "running"
    assert status_with(_dead_owner()) == "interrupted"


def test_the_viewer_header_and_the_fleet_table_say_interrupted(tmp_path):
    from smoldata_tui.ui.screens.episode_status import episode_status
    from smoldata_tui.fleet.work import summarize_episode

    runs = tmp_path / "runs" / "20260101-000000-sales-top-region"
    runs.mkdir(parents=True)
    (runs / "run.jsonl").write_bytes((ROOT / "sample_traces" / "clean_pass.jsonl").read_bytes())
    save_metadata(runs / "run.meta.json", EpisodeMetadata(task="sales-top-region", status="running",
                                                          owner=_dead_owner(), trace="run.jsonl"))  # fmt: skip
    metadata = load_metadata(runs / "run.meta.json")
    assert metadata.status == "running"  # the file is not rewritten by reading it
    assert episode_status(metadata, None, finished=True, live=False) == "interrupted"
    assert summarize_episode(str(runs / "run.jsonl")).status == "interrupted"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smoldata_tui", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip


def test_after_sigkill_the_episode_reads_interrupted_and_local_gc_cleans_up(tmp_path, standin_sandboxes):  # noqa: F811
    marker = f"killed-run-{os.getpid()}"
    recording = _sleeping_recording(tmp_path, marker)
    runs = tmp_path / "runs"
    run = subprocess.Popen(
        [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--model", f"replay:{recording}",
         "--save", str(runs), "--headless", "--no-capture"],  # with capture the key never enters the sandbox
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert _wait_for(lambda: processes_matching(marker), AGENT_START_S)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
    # The sandbox's processes die with their owner; its folder, with the key, stays behind.
    assert _wait_for(lambda: not processes_matching(marker), 10)
    [left] = sandbox_dirs(standin_sandboxes)
    assert any(REPLAY_API_KEY in path.read_text(errors="replace") for path in left.rglob("opencode.json"))
    [meta_path] = runs.glob("*/run.meta.json")
    saved = json.loads(meta_path.read_text())
    assert saved["status"] == "running" and saved["owner"]["pid"] == run.pid
    assert effective_status(load_metadata(meta_path)) == "interrupted"

    listed = _cli("local", "ls", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [record] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert record["id"] == left.name and record["owner_alive"] is False and record["owner_pid"] == run.pid

    asked = _cli("local", "gc", "--save", str(runs), cwd=tmp_path)  # no terminal, no --yes: only says
    assert asked.returncode == 1 and "pass --yes" in asked.stdout
    assert f"leftover {left.name}" in asked.stdout and "interrupted episode" in asked.stdout
    assert left.exists()

    done = _cli("local", "gc", "--yes", "--save", str(runs), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"removed {left.name}" in done.stdout
    assert sandbox_dirs(standin_sandboxes) == []
    rewritten = json.loads(meta_path.read_text())
    assert rewritten["status"] == "interrupted" and "without saving" in rewritten["stop_reason"]
    again = _cli("local", "gc", "--save", str(runs), cwd=tmp_path)
    assert again.returncode == 0 and "nothing to clean up" in again.stdout
