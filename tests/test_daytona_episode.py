"""Episodes on the Daytona backend, end to end: the real ``daytona`` SDK against a local server that
speaks Daytona's API and runs every command for real in a bubblewrap sandbox, the replay model and
the real graders. The agent is the stand-in OpenCode (tests/standin_agent): these tests are about
our Daytona code, and tests/test_standin_agent.py holds the stand-in to the real binary; the real
OpenCode is uploaded and run in one test. Every test ends with the server holding no sandbox."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend, DaytonaSettings
from smoldata_tui.sandbox.errors import SandboxError
from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes, analyze_path

from .conftest import SAMPLES
from .daytona_local.fixtures import local_daytona, serve  # noqa: F401 - a fixture
from .daytona_local.server import LocalDaytona
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import Recorder, _self_killing_recording, _sleeping_recording

PASSING = SAMPLES / "clean_pass.jsonl"
FAST = dict(keepalive_s=0.5, retry_budget_s=30.0, create_timeout_s=60.0)


def run_daytona(task_name: str, model: str, save: Path, *, settings: DaytonaSettings | None = None,
                timeout: float = 300, during=None, opencode_bin: Path | None = None) -> tuple:  # fmt: skip
    """Run one episode on the daytona backend; ``during(episode, recorder)`` runs in a thread
    once the agent has started. ``opencode_bin``: the OpenCode to upload where the image has none."""
    task = load_task(default_task_root() / task_name)
    recorder = Recorder()
    spec = EpisodeSpec(task=task, endpoint=open_endpoint(model=model), backend="daytona", timeout_s=timeout,
                       save_dir=save, daytona=settings or DaytonaSettings(**FAST),
                       opencode_bin=None if opencode_bin is None else str(opencode_bin))  # fmt: skip
    episode = Episode(spec, recorder)
    if during is not None:
        def watch():
            while not any(name == "agent running" and state == "started" for name, state, _ in recorder.stages):
                time.sleep(0.05)
            during(episode, recorder)

        threading.Thread(target=watch, daemon=True).start()
    return episode.run(), recorder


def messages(recorder: Recorder, stage: str | None = None) -> list[str]:
    return [message for name, _, message in recorder.stages if message and (stage is None or name == stage)]


def once_events_arrive(server, action):
    """A ``during`` callback: ``action(sandbox_id)`` once the agent's first events have arrived."""
    def act(_episode, recorder):
        while len(recorder.bytes) == 0:
            time.sleep(0.05)
        (sandbox_id,) = server.sandbox_ids()
        action(sandbox_id)

    return act


def call_sequence(data: bytes) -> list[tuple]:
    events = [json.loads(line) for line in data.splitlines() if line.strip()]
    return [(e.get("type"), (e.get("part") or {}).get("tool"), (e.get("part") or {}).get("callID")) for e in events]


@dataclass
class ServedRun:
    result: object
    recorder: Recorder
    server: LocalDaytona
    left_after_run: list[str]  # the server's sandboxes once the episode had ended


@pytest.fixture(scope="module")
def passing_run(tmp_path_factory, standin_opencode):
    """The undisturbed Daytona episode of clean_pass.jsonl, run once (on a server of its own): one test
    holds it to what the environment does, another compares a disturbed run's calls with it."""
    folder = tmp_path_factory.mktemp("daytona-passing")
    server = LocalDaytona(opencode_bin_dir=standin_opencode.parent, sandbox_base_dir=folder / "daytona-sandboxes")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for served in serve(server, monkeypatch):  # serve stops the server once this loop ends
            result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", folder / "runs")
            left = served.sandbox_ids()
    return ServedRun(result, recorder, server, left)


def test_replayed_episode_in_daytona_grades_one_and_leaves_nothing(passing_run):
    result, recorder, server = passing_run.result, passing_run.recorder, passing_run.server
    assert result.error is None, result.error
    assert result.status == "finished" and result.grade.env_reward == 1.0
    live = analyze_bytes(result.trace_path.read_bytes())[0]
    assert live.verdict.native_tool_calls == analyze_path(PASSING)[0].verdict.native_tool_calls == 3
    assert bytes(recorder.bytes) == result.trace_path.read_bytes()
    done = [name for name, state, _ in recorder.stages if state == "done"]
    assert done == ["create sandbox", "install OpenCode", "capture proxy", "stage task", "agent running", "recover calls", "grading"]
    assert any("nothing to install" in m for m in messages(recorder, "install OpenCode"))
    # The sandbox was made the way the environment makes it, labelled, capped, and deleted.
    assert passing_run.left_after_run == []
    metadata = json.loads(result.metadata_path.read_text())
    sandbox_id = metadata["sandbox"]["id"]
    params = server.create_params(sandbox_id)
    assert params["user"] == "root"
    assert "savatar101/env-data-agent-train:base" in json.dumps(params)
    assert params["labels"]["app"] == "smoldata-tui" and params["labels"]["task"] == "sales-top-region"
    assert params["labels"]["run"] == result.trace_path.parent.name and "@" in params["labels"]["owner"]
    assert params["autoStopInterval"] == 15 and params["autoDeleteInterval"] == 0 and params["ttlMinutes"] >= 32
    assert params["name"].startswith("smoldata-")
    assert (params["cpu"], params["memory"], params["disk"]) == (1, 4, 5)  # the environment's backend's
    # The Daytona key stays with the SDK: never in a saved file or a stage message.
    for path in result.trace_path.parent.iterdir():
        assert server.api_key not in path.read_text(errors="replace"), path
    assert all(server.api_key not in message for message in messages(recorder))
    # Auto-stop counts inactivity: the watched run kept telling Daytona it is in use.
    pings = [path for method, path, _ in server.requests if method == "POST" and path.endswith(f"{sandbox_id}/last-activity")]
    assert len(pings) >= 3
    # The log crossed the network once: base64 (4/3) plus a few bytes per request.
    transfer = metadata["sandbox"]["transfer"]
    log_size = result.trace_path.stat().st_size
    assert transfer["log_bytes"] == log_size
    assert log_size <= transfer["wire_bytes"] <= log_size * 4 / 3 + 64 * 1024


def test_opencode_is_uploaded_when_the_image_lacks_it(tmp_path, local_daytona, opencode_bin):  # noqa: F811
    """The real binary: the one test that uploads the real OpenCode (185 MB) and runs it in a sandbox."""
    settings = DaytonaSettings(image="docker.io/library/ubuntu:24.04", **FAST)
    result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", tmp_path / "runs", settings=settings)
    assert result.error is None, result.error
    assert result.grade.env_reward == 1.0
    install = messages(recorder, "install OpenCode")
    assert any(m.startswith("uploading OpenCode 1.18.31") for m in install), install
    assert any(m.startswith("OpenCode 1.18.31 installed") for m in install), install
    assert local_daytona.sandbox_ids() == []


def test_rate_limits_and_server_errors_are_retried_and_shown(tmp_path, local_daytona):
    local_daytona.fail_next(2, 429, path_contains="/sandbox", method="POST")
    local_daytona.fail_next(1, 503, path_contains="files/bulk-upload")
    local_daytona.fail_next(1, 502, path_contains="process/execute")
    result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", tmp_path / "runs")
    assert result.error is None, result.error
    assert result.grade.env_reward == 1.0
    retries = [m for m in messages(recorder) if m.startswith("Daytona ")]
    assert any("rate limited (429) on create" in m for m in retries), retries
    assert any("server error (503)" in m for m in retries), retries
    assert any("server error (502)" in m for m in retries), retries
    assert local_daytona.sandbox_ids() == []


def test_a_network_drop_mid_run_loses_and_duplicates_nothing(tmp_path, local_daytona, passing_run):
    reference = passing_run.result

    # Once the agent's events flow: the log is being followed then, so requests are in flight.
    drop = once_events_arrive(local_daytona, lambda _sandbox_id: local_daytona.drop_connections(2.0))
    result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", tmp_path / "runs", during=drop)
    assert result.error is None, result.error
    assert result.grade.env_reward == 1.0
    assert any("connection lost" in m for m in messages(recorder)), messages(recorder)
    assert call_sequence(result.trace_path.read_bytes()) == call_sequence(reference.trace_path.read_bytes())
    assert local_daytona.sandbox_ids() == []


def _kill_a_log_read(log_name: str = "opencode.jsonl", within_s: float = 10.0) -> list[int]:
    """SIGKILL the shells of the log reads in flight (``read_appended``'s script, run in the sandbox),
    as a loaded sandbox did in a CI run: their exec answers with an empty result."""
    deadline, killed = time.monotonic() + within_s, []
    while not killed and time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if command.startswith("bash") and "stat -c %s" in command and log_name in command:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
                except OSError:
                    pass
        time.sleep(0.02)
    return killed


def slowed_recording(folder: Path, seconds: float) -> Path:
    """PASSING with its first bash call waiting ``seconds`` first: the same calls, and an agent still
    running (its log still read) well after its first events, however fast the agent is."""
    lines = PASSING.read_bytes().splitlines()
    for index, line in enumerate(lines):
        event = json.loads(line)
        if event.get("type") == "tool_use" and event["part"]["tool"] == "bash":
            event["part"]["state"]["input"]["command"] = f"sleep {seconds:g}; " + event["part"]["state"]["input"]["command"]
            lines[index] = json.dumps(event).encode()
            break
    path = folder / "slowed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_a_log_read_killed_in_the_sandbox_is_asked_again_and_loses_nothing(tmp_path, local_daytona, passing_run):
    reference = passing_run.result
    killed: list[int] = []
    kill = once_events_arrive(local_daytona, lambda _sandbox_id: killed.extend(_kill_a_log_read()))
    recording = slowed_recording(tmp_path, 3)
    result, recorder = run_daytona("sales-top-region", f"replay:{recording}", tmp_path / "runs", during=kill)
    assert killed, "no log read was in flight to kill"
    assert result.error is None, result.error
    assert result.grade.env_reward == 1.0
    assert any("cut short a read" in m for m in messages(recorder)), messages(recorder)
    assert call_sequence(result.trace_path.read_bytes()) == call_sequence(reference.trace_path.read_bytes())
    assert local_daytona.sandbox_ids() == []


def test_a_sandbox_in_error_state_is_reported_its_trace_kept_and_deleted(tmp_path, local_daytona):
    recording = _sleeping_recording(tmp_path)

    break_it = once_events_arrive(local_daytona, lambda sid: local_daytona.set_state(sid, "error", reason="disk failure on runner"))
    result, recorder = run_daytona("sales-top-region", f"replay:{recording}", tmp_path / "runs", during=break_it)
    assert result.status == "error" and result.error.stage == "agent running"
    assert "state 'error'" in str(result.error) and "disk failure on runner" in str(result.error)
    assert result.trace_path.stat().st_size > 0  # what arrived before is saved
    assert json.loads(result.metadata_path.read_text())["status"] == "error"
    assert local_daytona.sandbox_ids() == []


def test_a_sandbox_stopped_and_auto_deleted_mid_run_is_reported_and_recorded(tmp_path, local_daytona):
    recording = _sleeping_recording(tmp_path)

    stop_it = once_events_arrive(local_daytona, local_daytona.auto_stop)  # auto_delete_interval=0: stopped means deleted
    result, recorder = run_daytona("sales-top-region", f"replay:{recording}", tmp_path / "runs", during=stop_it)
    assert result.status == "error" and result.error.stage == "agent running"
    # Caught while Daytona stops it, or once it is gone (a 404): said the same way, never "not found".
    assert re.search(r"entered state '(stopping|destroyed)'", str(result.error)), result.error
    assert "not found" not in str(result.error)
    saved = json.loads(result.metadata_path.read_text())
    assert saved["status"] == "error" and saved["grade"] is None
    assert saved["error"] == {"stage": "agent running", "message": result.error.reason}
    assert result.trace_path.stat().st_size > 0
    assert local_daytona.sandbox_ids() == []


def test_a_lost_answer_to_opencode_export_is_asked_again_and_the_grade_kept(tmp_path, local_daytona):
    local_daytona.drop_answer_next(1, path_contains="process/execute", body_contains="opencode export ")
    # The export is asked only of an agent that did not end on its own: this one is killed mid-call.
    result, recorder = run_daytona("sales-top-region", f"replay:{_self_killing_recording(tmp_path)}", tmp_path / "runs")
    assert result.error is None, result.error
    assert result.status == "killed" and result.grade.env_reward == 1.0
    recover = messages(recorder, "recover calls")
    assert any("connection lost on exec" in m for m in recover), recover
    assert any("1 unfinished call(s) recovered from opencode export" in m for m in recover), recover
    assert [(call.tool, call.status) for call in result.recovered] == [("bash", "running")]
    assert json.loads(result.metadata_path.read_text())["error"] is None
    assert local_daytona.sandbox_ids() == []


def test_an_export_that_keeps_failing_never_costs_the_grade(tmp_path, local_daytona):
    local_daytona.fail_next(1000, 500, path_contains="process/execute", body_contains="opencode export ")
    settings = DaytonaSettings(**{**FAST, "retry_budget_s": 3.0})
    result, recorder = run_daytona("sales-top-region", f"replay:{_self_killing_recording(tmp_path)}", tmp_path / "runs",
                                   settings=settings)  # fmt: skip
    assert result.error is None, result.error
    assert (result.status, result.grade.env_reward, result.recovered) == ("killed", 1.0, []), (result.grade, messages(recorder))
    recover = messages(recorder, "recover calls")
    assert any("opencode export failed" in m for m in recover), recover
    assert local_daytona.sandbox_ids() == []


def test_cancel_mid_tool_stops_the_agent_recovers_the_call_and_deletes(tmp_path, local_daytona):
    recording = _sleeping_recording(tmp_path)

    def cancel(episode, recorder):
        while b"step_start" not in recorder.bytes:  # a running tool is not in the stream: give it time to start
            time.sleep(0.05)
        time.sleep(3.0)
        episode.cancel()

    started = time.monotonic()
    result, recorder = run_daytona("sales-top-region", f"replay:{recording}", tmp_path / "runs", during=cancel)
    assert time.monotonic() - started < 240  # well short of the `sleep 300` (the capture proxy's start included)
    assert result.status == "cancelled" and result.grade is None, (result.status, str(result.error), messages(recorder)[-8:])
    assert [(c.tool, c.status) for c in result.recovered] == [("bash", "running")]
    assert local_daytona.sandbox_ids() == []


def test_a_create_that_times_out_deletes_the_sandbox_it_made(tmp_path, local_daytona):
    local_daytona.create_delay(4.0)
    backend = DaytonaSandboxBackend(DaytonaSettings(**{**FAST, "create_timeout_s": 1.0}))
    progress: list[str] = []
    with pytest.raises(SandboxError) as raised:
        backend.create(timeout_s=60, metadata={"run": "r1", "task": "t"}, progress=progress.append)
    assert "deleted sandbox" in str(raised.value)
    time.sleep(4.5)  # the server finishes the slow create; the sandbox must still be gone
    assert local_daytona.sandbox_ids() == []


def test_a_missing_file_is_a_clear_message(local_daytona):
    sandbox = DaytonaSandboxBackend(DaytonaSettings(**FAST)).create(timeout_s=60, metadata={"run": "r2"})
    try:
        with pytest.raises(FileNotFoundError) as raised:
            sandbox.read_text("/workdir/nope.txt")
        assert "/workdir/nope.txt" in str(raised.value) and "no such file" in str(raised.value)
        result = sandbox.exec("echo out; echo err >&2; exit 7", timeout=30)
        assert (result.exit_code, result.stdout, result.stderr) == (7, "out\n", "err\n")
        assert sandbox.exec("sleep 10", timeout=1).exit_code == 124
        assert sandbox.exec("trap '' TERM; sleep 30", timeout=1).exit_code == 124  # needed timeout(1)'s KILL
        # A command that may have run (500) is not run again; one that surely did not (503) is.
        local_daytona.fail_next(1, 500, path_contains="process/execute")
        with pytest.raises(SandboxError, match="500"):
            sandbox.exec("echo once >> /tmp/count", timeout=30)
        local_daytona.fail_next(1, 503, path_contains="process/execute")
        assert sandbox.exec("echo once >> /tmp/count; wc -l < /tmp/count", timeout=30).stdout.strip() == "1"
        sandbox.write_bytes("/tmp/x/bin.dat", bytes(range(256)))
        assert sandbox.read_bytes("/tmp/x/bin.dat", 250) == bytes(range(250, 256))
        assert sandbox.size("/tmp/x/bin.dat") == 256 and sandbox.size("/tmp/none") is None
    finally:
        sandbox.kill()
    assert local_daytona.sandbox_ids() == []


def test_a_background_job_does_not_wait_on_the_sessions_open_stdin(local_daytona):
    """The daemon never closes a session command's stdin; `opencode run` reads stdin to its end.
    A job (the agent, opencode_env's proxy) must get /dev/null, or it waits forever."""
    sandbox = DaytonaSandboxBackend(DaytonaSettings(**FAST)).create(timeout_s=60, metadata={"run": "stdin"})
    try:
        job = sandbox.start_bg("cat > /tmp/read.txt; echo read-to-the-end")
        assert job.wait(timeout=30) == 0
        assert sandbox.exec("cat /tmp/read.txt | wc -c", timeout=30).stdout.strip() == "0"
        assert sandbox.exec("cat; echo ok", timeout=30).stdout == "ok\n"
    finally:
        sandbox.kill()
    assert local_daytona.sandbox_ids() == []


def test_a_snapshot_from_the_environment_variable_replaces_the_image(local_daytona, monkeypatch):
    monkeypatch.setenv("DAYTONA_SNAPSHOT", "smoldata-base-snapshot")
    settings = DaytonaSettings.from_environment(keepalive_s=0.5)
    assert settings.source == "snapshot smoldata-base-snapshot"
    sandbox = DaytonaSandboxBackend(settings).create(timeout_s=60, metadata={"run": "snap"})
    try:
        params = local_daytona.create_params(sandbox.sandbox_id)
        assert params["snapshot"] == "smoldata-base-snapshot" and not params.get("buildInfo")
        assert sandbox.exec("test -x /root/.opencode/bin/opencode", timeout=30).exit_code == 0  # baked in
    finally:
        sandbox.kill()
    flag = DaytonaSettings.from_environment(snapshot="from-the-flag")  # --daytona-snapshot wins
    assert flag.snapshot == "from-the-flag"
    assert local_daytona.sandbox_ids() == []
