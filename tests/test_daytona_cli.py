"""The Daytona backend from the command line: a missing key stops everything before any work;
every way a run can end (SIGTERM, Ctrl-C, a crash, SIGKILL) leaves the server without our
sandbox, or (SIGKILL, which nothing can catch) with one that ``daytona gc`` finds and deletes
while it keeps the sandboxes of live runs and of other owners."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend, DaytonaSettings

from .conftest import ROOT, SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_episode_local import _sleeping_recording, processes_matching



@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """Live-run records of this test (and its child processes) stay under tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "smoldata_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)  # fmt: skip


def start_run(tmp_path, marker: str) -> subprocess.Popen:
    """A headless daytona run whose agent replays one ``sleep 300`` tagged with ``marker``;
    returns once that sleep runs in the sandbox (not after a fixed pause: a loaded machine
    takes longer to create the sandbox and start the capture proxy and OpenCode)."""
    recording = _sleeping_recording(tmp_path, marker)
    command = [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--backend", "daytona",
               "--model", f"replay:{recording}", "--save", str(tmp_path / "runs"), "--timeout", "280", "--headless"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    proc.stderr_lines, proc.stdout_lines = [], []  # type: ignore[attr-defined]

    def read(stream, lines, stamped=False):
        for line in stream:
            lines.append(f"{time.monotonic() - started:6.1f}s {line}" if stamped else line)

    started = time.monotonic()
    threading.Thread(target=read, args=(proc.stderr, proc.stderr_lines, True), daemon=True).start()
    threading.Thread(target=read, args=(proc.stdout, proc.stdout_lines), daemon=True).start()
    while not processes_matching(marker):
        if proc.poll() is not None or time.monotonic() - started > 240:
            proc.kill()
            pytest.fail("the agent's sleep never ran:\n" + "".join(proc.stderr_lines + proc.stdout_lines))
        time.sleep(0.1)
    return proc


def test_a_missing_key_is_reported_before_any_work(tmp_path, monkeypatch):
    monkeypatch.delenv("DAYTONA_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    done = cli("run", "--task", "sales-top-region", "--backend", "daytona", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}",
               "--save", str(tmp_path / "runs"), "--headless")  # fmt: skip
    assert done.returncode == 2
    assert "DAYTONA_API_KEY" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # nothing was started, not even a run folder
    for action in ("ls", "gc"):
        listed = cli("daytona", action)
        assert listed.returncode == 2 and "DAYTONA_API_KEY" in listed.stderr


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_signalled_run_saves_what_it_has_and_deletes_its_sandbox(tmp_path, local_daytona, own_cache, how):
    proc = start_run(tmp_path, f"daytona-signalled-{os.getpid()}-{how.name}")
    assert len(local_daytona.sandbox_ids()) == 1
    proc.send_signal(how)
    proc.wait(timeout=90)
    time.sleep(0.2)  # the readers take the last lines
    out, stderr = "".join(proc.stdout_lines), "".join(proc.stderr_lines)
    assert "Traceback" not in stderr
    assert local_daytona.sandbox_ids() == [], stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    metadata = json.loads((run_dir / "run.meta.json").read_text())
    assert metadata["status"] == "cancelled" and metadata["backend"] == "daytona"
    assert (run_dir / "run.jsonl").stat().st_size > 0
    if how == signal.SIGTERM:
        assert json.loads(out.strip().splitlines()[-1])["status"] == "cancelled"
    else:
        assert proc.returncode == 130 and "the sandbox released" in stderr


def test_a_crash_after_create_still_deletes_the_sandbox(tmp_path, local_daytona, own_cache):
    script = textwrap.dedent("""
        from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend
        sandbox = DaytonaSandboxBackend().create(timeout_s=60, metadata={"run": "crash"})
        print(sandbox.sandbox_id, flush=True)
        raise RuntimeError("the app crashed")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "the app crashed" in done.stderr and done.stdout.strip()
    assert local_daytona.sandbox_ids() == []


async def _create_foreign() -> str:
    """A sandbox with our app label made by another user on another machine."""
    from daytona import AsyncDaytona, CreateSandboxFromImageParams

    async with AsyncDaytona() as client:
        labels = {"app": "smoldata-tui", "run": "theirs", "owner": "someone@elsewhere"}
        sandbox = await client.create(CreateSandboxFromImageParams(image="docker.io/library/ubuntu:24.04", labels=labels))
        return sandbox.id


def test_gc_deletes_the_orphan_of_a_killed_run_and_keeps_live_and_foreign_ones(tmp_path, local_daytona, own_cache):
    proc = start_run(tmp_path, f"daytona-gc-{os.getpid()}")
    proc.kill()  # SIGKILL: nothing runs, the sandbox stays behind
    proc.wait(30)
    (orphan,) = local_daytona.sandbox_ids()
    runs_dir = tmp_path / "cache" / "smoldata-tui" / "daytona-runs"
    assert len(list(runs_dir.iterdir())) == 1  # SIGKILL skipped its cleanup
    backend = DaytonaSandboxBackend(DaytonaSettings(keepalive_s=0.5))
    live = backend.create(timeout_s=60, metadata={"run": "still-running"})  # this test process is its live owner
    foreign = asyncio.run(_create_foreign())
    try:
        listed = cli("daytona", "ls", "--json")
        assert listed.returncode == 0, listed.stderr
        rows = {row["id"]: row for row in map(json.loads, listed.stdout.splitlines())}
        assert set(rows) == {orphan, live.sandbox_id, foreign}
        assert rows[live.sandbox_id]["live_pid"] == os.getpid() and rows[orphan]["live_pid"] is None
        assert rows[orphan]["labels"]["task"] == "sales-top-region"
        # The killed run's sandbox says its run was interrupted; the live one's is running.
        assert rows[orphan]["run_status"] == "interrupted" and rows[live.sandbox_id]["run_status"] == "running"
        assert rows[foreign]["run_status"] is None
        table = cli("daytona", "ls")
        assert any(orphan in line and "interrupted" in line for line in table.stdout.splitlines())

        dry = cli("daytona", "gc")  # not a terminal: says what it would delete, deletes nothing
        assert dry.returncode == 1 and "pass --yes" in dry.stdout and orphan in dry.stdout
        assert len(local_daytona.sandbox_ids()) == 3

        collected = cli("daytona", "gc", "--yes")
        assert collected.returncode == 0, collected.stderr
        assert f"deleted {orphan}" in collected.stdout
        assert "live run" in collected.stdout and "someone@elsewhere" in collected.stdout
        assert sorted(local_daytona.sandbox_ids()) == sorted([live.sandbox_id, foreign])
        # The killed run's record went with its sandbox; the live run's stays.
        assert sorted(path.stem for path in runs_dir.iterdir()) == [live.name]
    finally:
        live.kill()
        backend.delete([foreign])
    assert local_daytona.sandbox_ids() == []


def test_gc_keeps_a_sandbox_whose_create_is_still_running(tmp_path, local_daytona, own_cache):
    local_daytona.build_image_on_create(4.0, ["Step 1/1 : FROM the environment's image"])
    made: dict = {}
    creating = threading.Thread(target=lambda: made.update(
        sandbox=DaytonaSandboxBackend(DaytonaSettings(keepalive_s=0.5)).create(timeout_s=60, metadata={"run": "slow"})))
    creating.start()
    for _ in range(100):
        if local_daytona.sandbox_ids():
            break
        time.sleep(0.05)
    (building,) = local_daytona.sandbox_ids()
    collected = cli("daytona", "gc", "--yes")  # while the image builds: the run is alive
    creating.join(30)
    try:
        assert collected.returncode == 0 and "live run" in collected.stdout, collected.stdout
        assert made["sandbox"].sandbox_id == building and local_daytona.sandbox_ids() == [building]
    finally:
        made["sandbox"].kill()
    assert local_daytona.sandbox_ids() == []


def test_a_long_owner_label_is_still_recognised_as_ours(monkeypatch):
    from smoldata_tui.sandbox.daytona import backend, settings

    monkeypatch.setattr(settings, "owner", lambda: "u" * 40 + "@" + "h" * 40)
    labels = settings.labels_for("run", "task")
    assert len(labels["owner"]) == 63
    info = backend.SandboxInfo("id", "smoldata-x", "started", labels, "")
    assert info.mine
