"""Episodes end to end: OpenCode in a real bubblewrap sandbox, the replay model, the real sample
tasks and graders. Each test also checks that nothing is left behind. Tests about our episode code
(stages, grading, staging, the headless line) run the stand-in OpenCode (tests/standin_agent); the
ones marked ``opencode_bin`` keep the real binary, since they hold OpenCode's own behaviour."""

from __future__ import annotations

import json
from collections import Counter
import os
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.opencode.install import opencode_cache_dir
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes, analyze_path
from smoldata_tui.trace.build import TraceBuilder

from .conftest import SAMPLES, run_cli
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_sandbox_support import pids_matching, processes_matching  # noqa: F401 - used by other modules too


class Recorder:
    def __init__(self) -> None:
        self.stages: list[tuple[str, str, str]] = []
        self.bytes = bytearray()
        self.trace_path: Path | None = None

    def opened(self, trace_path: Path) -> None:
        self.trace_path = trace_path

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        self.stages.append((name, state, message))

    def received(self, data: bytes) -> None:
        self.bytes += data


@pytest.fixture
def sandboxes(tmp_path, monkeypatch):
    """Sandboxes of the test go under tmp_path, so leftovers can be seen."""
    return private_cache(tmp_path, monkeypatch)


@pytest.fixture
def standin_sandboxes(tmp_path, monkeypatch, standin_opencode):
    """As ``sandboxes``, with the stand-in OpenCode as the test's cached OpenCode: for tests about our
    code around the agent, which need none of OpenCode's own behaviour."""
    return private_cache(tmp_path, monkeypatch, opencode_cache=standin_opencode.parents[2])


def private_cache(folder: Path, monkeypatch: pytest.MonkeyPatch, opencode_cache: Path | None = None) -> Path:
    """``XDG_CACHE_HOME`` under ``folder`` (so sandboxes land there); the sandboxes' folder. Its
    OpenCode cache is a link to ``opencode_cache`` (the stand-in's: ``standin_opencode.parents[2]``),
    by default to the shared one the opencode_bin fixture installed the real OpenCode into
    (installing it per test would take minutes)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder / "cache"))
    shared = opencode_cache or opencode_cache_dir(os.path.join(os.path.expanduser("~"), ".cache", "smoldata-tui", "opencode"))
    ours = folder / "cache" / "smoldata-tui"
    ours.mkdir(parents=True)
    (ours / "opencode").symlink_to(shared)
    return ours / "sandboxes"


def sandbox_dirs(base: Path) -> list[Path]:
    return list(base.glob("sbx-*")) if base.exists() else []


def run_episode(task_name: str, model: str, save: Path, *, timeout: float = 300, tasks_root: Path | None = None,
                cancel_after: float | None = None, cancel_when=None, expire_when=None,
                capture: bool = True) -> tuple:  # fmt: skip
    task = load_task((tasks_root or default_task_root()) / task_name)
    endpoint = open_endpoint(model=model)
    recorder = Recorder()
    spec = EpisodeSpec(task=task, endpoint=endpoint, timeout_s=timeout, save_dir=save, capture=capture)
    episode = Episode(spec, recorder)
    if cancel_after is not None:
        threading.Timer(cancel_after, episode.cancel).start()
    if cancel_when is not None:  # cancel once the condition holds (polled), or after 240 s regardless

        def cancel_on_condition() -> None:
            deadline = time.monotonic() + 240
            while not cancel_when() and time.monotonic() < deadline:
                time.sleep(0.2)
            episode.cancel()

        threading.Thread(target=cancel_on_condition, daemon=True).start()
    if expire_when is not None:  # the --timeout runs out once the condition holds (polled)

        def expire_on_condition() -> None:
            deadline = time.monotonic() + 240
            while not expire_when() and time.monotonic() < deadline:
                time.sleep(0.2)
            episode._deadline = time.monotonic()  # what the episode's own clock does when --timeout runs out

        threading.Thread(target=expire_on_condition, daemon=True).start()
    return episode.run(), recorder


def messages_of(recorder: Recorder, stage: str) -> list[str]:
    return [message for name, _, message in recorder.stages if name == stage and message]


def test_replayed_passing_episode_grades_one_with_the_recordings_verdict(tmp_path, standin_sandboxes):
    recording = SAMPLES / "clean_pass.jsonl"
    result, recorder = run_episode("sales-top-region", f"replay:{recording}", tmp_path / "runs")
    assert result.error is None, result.error
    assert result.status == "finished" and result.exit_code == 0
    assert result.grade.env_reward == 1.0 and result.grade.grader_error is None
    recorded = analyze_path(recording)[0].verdict.native_tool_calls
    live = analyze_bytes(result.trace_path.read_bytes())[0]
    assert live.verdict.native_tool_calls == recorded == 3
    # What the observer was handed is exactly the saved trace, and every stage ran in order.
    assert bytes(recorder.bytes) == result.trace_path.read_bytes()
    done = [name for name, state, _ in recorder.stages if state == "done"]
    assert done == ["install OpenCode", "create sandbox", "capture proxy", "stage task", "agent running", "recover calls", "grading"]
    # An agent that ended on its own left no call running: OpenCode is not started again to ask.
    assert "the agent ended on its own (exit code 0): no call was cut short" in messages_of(recorder, "recover calls")
    assert result.recovered == []
    metadata = json.loads(result.metadata_path.read_text())
    assert metadata["status"] == "finished" and metadata["grade"]["env_reward"] == 1.0
    assert metadata["sandbox"]["opencode_version"] == "1.18.31"
    assert metadata["model"] == f"replay:{recording}"
    assert metadata["prompt"] == load_task(default_task_root() / "sales-top-region").instruction  # what the agent was given
    assert sandbox_dirs(standin_sandboxes) == []


class _Unauthorized(BaseHTTPRequestHandler):
    """A model endpoint that refuses every request at once: the agent ends with an error event."""

    def do_POST(self):  # noqa: N802
        body = b'{"error": {"message": "invalid api key", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.mark.usefixtures("opencode_bin")  # no-capture: what OpenCode itself does with a provider's 401
@pytest.mark.parametrize("capture", [True, False], ids=["capture", "no-capture"])
def test_the_api_key_is_never_saved_or_reported(tmp_path, sandboxes, monkeypatch, capture):
    secret = "sk-live-do-not-leak-7d1f0a9c3b"
    password = "url-pass-4e8b2d"  # a URL's password is quoted by stage messages ("probing URL") and errors
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SANDBOX_VLLM_KEY", secret)
    monkeypatch.setenv("SANDBOX_VLLM_URL", f"http://alice:{password}@127.0.0.1:{server.server_address[1]}")
    try:
        result, recorder = run_episode("sales-top-region", "some-model", tmp_path / "runs", timeout=90, capture=capture)
    finally:
        server.shutdown()
    if capture:  # the capture proxy's probe is refused: the episode stops before the agent, saying why
        # (openenv's probe uses urllib, which reads user:password@ as part of the host name)
        assert result.status == "error" and result.error.stage == "capture proxy" and "probe failed" in result.error.reason
    else:
        assert result.graded and result.grade.env_reward == 0.0  # a failed agent is still an episode
        assert b'"type":"error"' in result.trace_path.read_bytes()
    for path in result.trace_path.parent.iterdir():
        assert secret not in path.read_text(errors="replace"), path
        assert password not in path.read_text(errors="replace"), path
    assert all(secret not in message and password not in message for _, _, message in recorder.stages)
    assert any("probing" in message for _, _, message in recorder.stages) == capture  # the URL was quoted
    assert sandbox_dirs(sandboxes) == []


def _sleeping_recording(tmp_path: Path, marker: str = "done-sleeping") -> Path:
    """A recorded episode whose one bash call sleeps 300 s; ``marker`` makes its command line unique."""
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(f"sleep 300 && echo {marker}", f"{marker}\n")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("finished")
    builder.step_finish("stop")
    path = tmp_path / "sleepy.jsonl"
    path.write_bytes(builder.dumps())
    return path


def _self_killing_recording(tmp_path: Path) -> Path:
    """A recorded episode that writes the right answer, then whose bash call kills OpenCode (its
    parent): the agent dies mid-call (exit 137) on its own, so the call is recovered from
    ``opencode export`` and the answer is still graded."""
    builder = TraceBuilder()
    builder.step_start()
    builder.tool("write", {"filePath": "/workdir/answer.txt", "content": "West\n"}, output="Wrote file successfully.")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.bash("kill -KILL $PPID; sleep 30", "")
    builder.step_finish("tool-calls")
    path = tmp_path / "self-killing.jsonl"
    path.write_bytes(builder.dumps())
    return path


@pytest.mark.usefixtures("opencode_bin")  # the running call comes from OpenCode's own session export
@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_stopping_mid_tool_leaves_nothing_and_recovers_the_running_call(tmp_path, sandboxes, how):
    marker = f"stop-mid-tool-{os.getpid()}-{how}"
    recording = _sleeping_recording(tmp_path, marker)
    started = time.monotonic()
    # Without the capture proxy (cancelling through it is covered in test_training_capture.py).
    if how == "cancel":  # once the agent's `sleep 300` runs: the call is in flight
        result, recorder = run_episode("sales-top-region", f"replay:{recording}", tmp_path / "runs",
                                       cancel_when=lambda: processes_matching(marker), capture=False)  # fmt: skip
    else:  # the time runs out once the agent's `sleep 300` runs (test_episode_caps: it counts from the start)
        result, recorder = run_episode("sales-top-region", f"replay:{recording}", tmp_path / "runs", timeout=240,
                                       expire_when=lambda: processes_matching(marker), capture=False)  # fmt: skip
    assert time.monotonic() - started < 240  # not the 300 s the call would take
    assert result.status == ("cancelled" if how == "cancel" else "timeout")
    assert [(c.tool, c.status) for c in result.recovered] == [("bash", "running")]
    assert "sleep 300" in json.dumps(result.recovered[0].input)
    saved = json.loads(result.metadata_path.read_text())["recovered_calls"]
    assert [(call["tool"], call["status"], call["source"]) for call in saved] == [("bash", "running", "opencode export")]
    assert processes_matching(marker) == []
    assert sandbox_dirs(sandboxes) == []
    assert json.loads(result.metadata_path.read_text())["status"] == result.status
    if how == "cancel":
        assert result.grade is None  # a cancelled episode is not graded
    else:
        assert result.grade is not None  # a timeout is graded on what the agent left


def test_grader_crash_is_a_grader_failure_not_a_zero(tmp_path, standin_sandboxes):
    root = tmp_path / "tasks"
    shutil.copytree(default_task_root() / "sales-top-region", root / "sales-top-region")
    (root / "sales-top-region" / "tests" / "grader.py").write_text("raise RuntimeError('grader exploded')\n")
    result, _ = run_episode(
        "sales-top-region", f"replay:{SAMPLES / 'clean_pass.jsonl'}", tmp_path / "runs", tasks_root=root
    )
    assert result.grade is not None and result.grade.env_reward is None
    assert "grader" in result.grade.grader_error.lower() or "exploded" in result.grade.grader_error
    assert json.loads(result.metadata_path.read_text())["grade"]["grader_error"]


def test_missing_data_fails_staging_clearly_and_releases_the_sandbox(tmp_path, standin_sandboxes):
    # The bucket download "succeeds" but brings nothing: /home/user/input stays empty.
    root = tmp_path / "tasks"
    shutil.copytree(default_task_root() / "sensor-fault-rate", root / "sensor-fault-rate")
    (root / "sensor-fault-rate" / "environment" / "pull_bucket.py").write_text("print('bucket is empty')\n")
    result, recorder = run_episode(
        "sensor-fault-rate", f"replay:{SAMPLES / 'clean_pass.jsonl'}", tmp_path / "runs", tasks_root=root
    )
    assert result.status == "error" and result.error.stage == "stage task"
    failed = [message for name, state, message in recorder.stages if (name, state) == ("stage task", "failed")]
    assert failed and "empty" in failed[0]
    assert result.grade is None
    assert sandbox_dirs(standin_sandboxes) == []


@pytest.fixture(scope="module")
def headless_clean_pass(tmp_path_factory, standin_opencode):
    """One ``run --headless`` of clean_pass.jsonl on today's task, shared by the tests that read what it
    printed (none changes it): each would otherwise start the same episode again."""
    folder = tmp_path_factory.mktemp("headless-clean-pass")
    with pytest.MonkeyPatch.context() as monkeypatch:
        private_cache(folder, monkeypatch, opencode_cache=standin_opencode.parents[2])
        return run_cli(
            "run", "--task", "sales-top-region", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}",
            "--save", str(folder / "runs"), "--headless", timeout=600,
        )  # fmt: skip


def test_headless_cli_prints_events_and_a_final_json_line(headless_clean_pass, cli):
    done = headless_clean_pass
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    final = json.loads(lines[-1])
    assert final["task"] == "sales-top-region" and final["native_tool_calls"] == 3
    assert final["grade"]["env_reward"] == 1.0 and Path(final["trace"]).is_file()
    assert final["capture_level"] == "tokens" and Path(final["training_trace"]).name == "run.training.json"
    assert Path(final["training_trace"]).is_file()
    assert set(final["findings"]) == {"error", "warning", "info"}
    assert sum("tool_use" in line for line in lines[:-1]) == 3
    assert "[grading] done" in done.stderr
    # The same findings as check on the saved episode, sidecars and capture record included.
    checked = json.loads(cli("check", "--json", "--no-cache", final["trace"]).stdout)
    by_severity = {severity: sum(1 for f in checked["findings"] if f["severity"] == severity)
                   for severity in ("error", "warning", "info")}  # fmt: skip
    assert final["findings"] == by_severity and final["finding_codes"] == dict(Counter(f["kind"] for f in checked["findings"]))
    assert final["finding_codes"], "a captured live run has findings from its sidecars and capture record"


def test_headless_cli_usage_errors(tmp_path, cli):
    missing = cli("run", "--task", "no-such-task", "--model", "x", "--base-url", "http://127.0.0.1:9", "--api-key", "k",
                  "--headless")  # fmt: skip
    assert missing.returncode == 2 and "no task 'no-such-task'" in missing.stderr
    no_key = cli("run", "--task", "sales-top-region", "--model", "m", "--headless")
    assert no_key.returncode == 2 and ("SANDBOX_VLLM_URL" in no_key.stderr or "SANDBOX_VLLM_KEY" in no_key.stderr)
    malformed = tmp_path / "tasks" / "broken"
    malformed.mkdir(parents=True)
    (malformed / "task.toml").write_text("this is [not toml")
    bad = cli("run", "--task", "broken", "--tasks", str(tmp_path / "tasks"), "--model", "replay:x", "--headless")
    assert bad.returncode == 2 and "task.toml" in bad.stderr
    assert "Traceback" not in missing.stderr + no_key.stderr + bad.stderr


@pytest.mark.usefixtures("opencode_bin")  # the README's claim, about OpenCode itself replaying a real recording
def test_the_readme_demo_replays_with_no_divergence_and_grade_1(tmp_path, cli, sandboxes):
    """Exactly the replay line of the README's "Try it" and of docs/run.md (with a --save folder of its own)."""
    shown = {
        doc: [text.strip() for text in (SAMPLES.parent / doc).read_text().splitlines()
              if text.startswith("smoldata-tui run --task") and "replay:" in text]
        for doc in ("README.md", "docs/run.md")
    }  # fmt: skip
    assert shown["README.md"] and shown["README.md"] == shown["docs/run.md"], shown
    line = shown["README.md"][0]
    arguments = line.split()[1:] + ["--save", str(tmp_path / "runs")]
    done = cli(*arguments, timeout=300)
    assert done.returncode == 0, done.stderr
    final = json.loads(done.stdout.strip().splitlines()[-1])
    assert final["divergences"] == [], final["divergences"]
    assert final["grade"]["env_reward"] == 1.0 and final["status"] == "finished"
    assert "diverged" not in done.stderr
    assert not (Path(final["trace"]).parent / "run.divergence.json").exists()


def test_a_diverging_replay_says_what_diverged_on_the_headless_line(headless_clean_pass):
    # clean_pass.jsonl was written for a sales_2024.csv and pandas: today's task has neither.
    done = headless_clean_pass
    final = json.loads(done.stdout.strip().splitlines()[-1])
    assert final["divergences"] and all(isinstance(item, str) for item in final["divergences"])
    assert any("bash" in item and "recorded" in item and "now" in item for item in final["divergences"])
    assert "[replay] diverged:" in done.stderr
