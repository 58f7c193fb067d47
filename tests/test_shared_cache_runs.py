"""Runs that share one cache folder from different PID namespaces (containers, CI jobs with one
home) never take each other's live sandbox or episode for a leftover: liveness is a lock the
owner holds, not a pid. Each run here is the real CLI, run under ``unshare --pid --fork
--mount-proc`` with the test's XDG_CACHE_HOME, with the stand-in OpenCode (tests/standin_agent: the
tests are about our locks and sweeps, not OpenCode) in a real sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from smoldata_tui.fleet.check import list_traces
from smoldata_tui.fleet.work import summarize_episode
from smoldata_tui.sandbox import LocalSandboxBackend, owner_lock, processes, registry
from smoldata_tui.store.metadata import effective_status
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace.build import TraceBuilder

from .test_episode_local import processes_matching, sandbox_dirs, standin_sandboxes  # noqa: F401 - a fixture
from .test_live_exits import AGENT_START_S, _wait_for

RUN_S = 240  # from the go file to the saved end: grading and removing the sandbox, on a loaded machine


def waiting_recording(tmp_path: Path, marker: str, *, also: str = "") -> Path:
    """A recorded episode whose one bash call writes the right answer (and runs ``also``), then
    waits until the test creates ``/workdir/go-<marker>``: the run lives as long as the test wants."""
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(f"echo West > /workdir/answer.txt; {also} until [ -e /workdir/go-{marker} ]; do sleep 0.1; done", "")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("finished")
    builder.step_finish("stop")
    path = tmp_path / f"waiting-{marker}.jsonl"
    path.write_bytes(builder.dumps())
    return path


def start_run(recording: Path, runs: Path, cwd: Path, *, own_pid_namespace: bool) -> subprocess.Popen:
    """``smoldata-tui run --headless`` (stdout to ``cwd/<recording stem>.out``); in a PID namespace of
    its own it runs under a shell that is the namespace's init, as in a container."""
    command = [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--model",
               f"replay:{recording}", "--save", str(runs), "--headless", "--no-capture"]  # fmt: skip
    if own_pid_namespace:
        command = ["unshare", "--pid", "--fork", "--mount-proc", "--", "sh", "-c", '"$@"; exit $?', "sh", *command]
    with open(cwd / f"{recording.stem}.out", "wb") as out:
        return subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def the_run_process(launcher: subprocess.Popen) -> int:
    """The host pid of the smoldata-tui process below ``launcher`` (unshare, then the shell)."""
    for pid in processes.descendants({launcher.pid}):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:4] == [sys.executable.encode(), b"-m", b"smoldata_tui", b"run"]:
            return pid
    raise AssertionError("the run's process is not below its launcher")


def final_line(recording: Path, cwd: Path) -> dict:
    lines = (cwd / f"{recording.stem}.out").read_text(errors="replace").splitlines()
    return json.loads(next(line for line in reversed(lines) if line.startswith("{")))


def open_files(pid: int) -> set[str]:
    found = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            pass
    return found


def holders_besides(owner: int, paths: set[str]) -> list[tuple[int, bytes]]:
    """The processes below ``owner`` that keep one of ``paths`` open. A child caught between its
    fork and its exec has every descriptor of its parent for a moment (close-on-exec ones too):
    only one that still has it a second later, as the same process, counts."""
    suspects = {pid: start for pid, start in processes.descendants({owner}).items() if open_files(pid) & paths}
    time.sleep(1.0)
    return [(pid, Path(f"/proc/{pid}/cmdline").read_bytes()) for pid, start in suspects.items()
            if processes.start_time(pid) == start and open_files(pid) & paths]  # fmt: skip


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "smoldata_tui", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip


def test_a_run_in_another_pid_namespace_is_never_taken_for_a_leftover(tmp_path, standin_sandboxes):  # noqa: F811
    runs = tmp_path / "runs"
    marker = f"other-namespace-{os.getpid()}"
    recording = waiting_recording(tmp_path, marker)
    launcher = start_run(recording, runs, tmp_path, own_pid_namespace=True)
    try:
        assert _wait_for(lambda: processes_matching(f"go-{marker}"), AGENT_START_S)
        run_pid = the_run_process(launcher)
        [meta_path] = runs.glob("*/run.meta.json")
        saved = json.loads(meta_path.read_text())
        # Its pid is the one its namespace gave it: here that pid is some other process, or none.
        assert saved["status"] == "running" and saved["owner"]["pid"] != run_pid and saved["owner"]["lock"] is True
        lock_file = meta_path.with_name("run.lock")
        assert owner_lock.is_held(lock_file) is True

        # Every reader says running: the viewer's status rule, the fleet table.
        assert effective_status(load_metadata(meta_path)) == "running"
        assert summarize_episode(str(meta_path.with_name("run.jsonl"))).status == "running"
        # The lock file is never taken for an episode or a trace.
        assert [Path(listed.path).name for listed in list_traces([str(runs)])] == ["run.jsonl"]
        [live] = sandbox_dirs(standin_sandboxes)
        assert [sandbox.owner_alive for sandbox in registry.list_sandboxes(standin_sandboxes)] == [True]
        # Only the owner holds the locks: no process it started (bwrap, the sandbox, OpenCode) keeps them.
        assert holders_besides(run_pid, {str(lock_file), str(live / registry.LOCK_FILE)}) == []

        # Another run's start-up sweep, then `local gc --yes`: both keep the live sandbox and episode.
        backend = LocalSandboxBackend(base_dir=standin_sandboxes)
        backend.create().kill()
        assert backend.remove_stale() == []
        collected = cli("local", "gc", "--yes", "--save", str(runs), cwd=tmp_path)
        assert collected.returncode == 0, collected.stdout + collected.stderr
        assert f"keeping {live.name}" in collected.stdout and "interrupted episode" not in collected.stdout
        assert live.is_dir() and json.loads(meta_path.read_text())["status"] == "running"

        (live / "root" / "workdir" / f"go-{marker}").touch()  # the agent goes on, in the sandbox it still has
        assert launcher.wait(RUN_S) == 0, (tmp_path / f"{recording.stem}.out").read_text(errors="replace")[-3000:]
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    summary = final_line(recording, tmp_path)
    assert summary["status"] == "finished" and summary["grade"]["env_reward"] == 1.0 and summary["error"] is None
    ended = json.loads(meta_path.read_text())
    assert ended["status"] == "finished" and ended["grade"]["env_reward"] == 1.0
    assert not lock_file.exists() and sandbox_dirs(standin_sandboxes) == []


def test_a_run_killed_in_another_pid_namespace_is_a_leftover_then(tmp_path, standin_sandboxes):  # noqa: F811
    runs = tmp_path / "runs"
    marker = f"killed-other-namespace-{os.getpid()}"
    recording = waiting_recording(tmp_path, marker)
    launcher = start_run(recording, runs, tmp_path, own_pid_namespace=True)
    try:
        assert _wait_for(lambda: processes_matching(f"go-{marker}"), AGENT_START_S)
        os.kill(the_run_process(launcher), signal.SIGKILL)
        launcher.wait(60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert _wait_for(lambda: not processes_matching(f"go-{marker}"), 30)
    [meta_path] = runs.glob("*/run.meta.json")
    assert json.loads(meta_path.read_text())["status"] == "running"
    assert effective_status(load_metadata(meta_path)) == "interrupted"
    assert summarize_episode(str(meta_path.with_name("run.jsonl"))).status == "interrupted"
    [left] = sandbox_dirs(standin_sandboxes)
    assert [sandbox.owner_alive for sandbox in registry.list_sandboxes(standin_sandboxes)] == [False]

    assert LocalSandboxBackend(base_dir=standin_sandboxes).remove_stale() == [left.name]  # the next sweep
    assert sandbox_dirs(standin_sandboxes) == []
    collected = cli("local", "gc", "--yes", "--save", str(runs), cwd=tmp_path)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert json.loads(meta_path.read_text())["status"] == "interrupted"
    assert not meta_path.with_name("run.lock").exists()  # the dead owner's lock file went with it


def test_a_child_forked_without_exec_does_not_keep_its_parents_lock_alive(tmp_path):
    lock_file = tmp_path / "owner.lock"
    script = (
        "import os, sys, time\n"
        "from smoldata_tui.sandbox import owner_lock\n"
        f"owner_lock.hold({str(lock_file)!r})\n"
        "if os.fork() == 0:\n"
        "    time.sleep(60); os._exit(0)\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )  # fmt: skip
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline() == "ready\n"
        [child] = processes.descendants({owner.pid})
        assert owner_lock.is_held(lock_file) is True
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert processes.start_time(child) is not None  # the forked child still runs…
        # …and holds nothing of its parent's. It lets go in its at-fork hook, when it first runs: on a
        # loaded machine that can be after its parent printed "ready" and died.
        assert _wait_for(lambda: owner_lock.is_held(lock_file) is False, 10)
    finally:
        owner.kill()
        owner.wait()
        if processes.start_time(child) is not None:
            os.kill(child, signal.SIGKILL)
