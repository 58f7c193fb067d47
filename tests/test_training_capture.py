"""Live episodes through openenv's real capture proxy: OpenCode in a real bubblewrap sandbox, the
replay model speaking vLLM's token-id dialect and logging what reached it, the saved
``run.training.json`` checked against openenv's own ``TrainingTrace`` and the seed's rule, and
``check`` reading the episode's sidecars. Tests about our capture, grading and saved files run the
stand-in OpenCode; the two whose assertions read what OpenCode itself sends keep the real one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import ModelEndpoint
from smoldata_tui.replay.script import ReplayCall, ReplayScript, ReplayTurn
from smoldata_tui.replay.server import ReplayServer
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace.seed_rule import seed_outcome
from smoldata_tui.training import load_training_trace
from smoldata_tui.training.requests import read_requests

from .conftest import SAMPLES, run_cli
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import Recorder, sandbox_dirs, sandboxes  # noqa: F401 - a fixture
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture

# An organisation prefix, which must reach the model whole; not a Qwen3.5 name, for which openenv
# disables thinking by itself: here only the environment's policy does.
MODEL = "acme-labs/coder-7b-instruct"
SECRET = "sk-endpoint-key-never-in-the-sandbox-91c2"


def replay_endpoint(script: ReplayScript, **options) -> tuple[ModelEndpoint, ReplayServer]:
    server = ReplayServer(script, model=MODEL, record_requests=True, **options).start()
    return ModelEndpoint(base_url=server.base_url, model=MODEL, api_key=SECRET, replay=server), server


def run(script: ReplayScript, save: Path, *, backend: str = "local", capture: bool = True, daytona=None, **options):
    endpoint, server = replay_endpoint(script, **options)
    task = load_task(default_task_root() / "sales-top-region")
    recorder = Recorder()
    spec = EpisodeSpec(task=task, endpoint=endpoint, save_dir=save, timeout_s=120, backend=backend, capture=capture,
                       daytona=daytona)  # fmt: skip
    return Episode(spec, recorder).run(), recorder, server


def agent_requests(server: ReplayServer) -> list[dict]:
    """What OpenCode's model calls asked (openenv's probe sends no tools; OpenCode's title call none either)."""
    return [request for request in server.requests if request["tools"]]


def assert_trainable_episode(result, server: ReplayServer, expected_calls: int | None) -> dict:
    assert result.error is None, result.error
    run_dir = result.trace_path.parent
    calls = agent_requests(server)
    assert calls, server.requests
    for request in calls:  # training's policy, on every tool-bearing request that reached the model
        assert request["model"] == MODEL
        assert request["max_tokens"] is not None and request["max_tokens"] <= 4096
        assert request["max_completion_tokens"] is None or request["max_completion_tokens"] <= 4096
        assert request["enable_thinking"] is False
        assert request["return_token_ids"] is True and request["logprobs"] is True
    # The proxy's own record of what it sent is the endpoint's record of what it received (OpenCode's
    # title call and its first agent call go out together: their order may differ between the two).
    sent = read_requests(run_dir / "run.requests.jsonl")
    received = server.requests[-len(sent):]
    assert sorted(map(json.dumps, sent)) == sorted(map(json.dumps, received))

    from openenv.core.harness.training import TrainingTrace

    text = (run_dir / "run.training.json").read_text()
    trace = TrainingTrace.model_validate_json(text)  # openenv's own schema, nothing else in the file
    assert set(json.loads(text)) == {"schema_version", "turns"} and trace.schema_version == 1
    assert len(trace.turns) == len(calls)  # one turn per model call
    seed = seed_outcome(result.trace_path.read_bytes())
    assert seed.crash is None and seed.calls == expected_calls
    for turn in trace.turns:
        assert turn.completion_token_ids and len(turn.per_token_logps) == len(turn.completion_token_ids)
        assert all(logp <= 0 for logp in turn.per_token_logps)
        assert turn.loss_mask == [0] * len(turn.prompt_token_ids) + [1] * len(turn.completion_token_ids)
        assert turn.metadata["native_tool_calls"] == seed.calls
        assert turn.metadata["model"] == MODEL and turn.request["tools"]
    # The system prompt names the model as training's does (opencode_env's "intercepted/<name after />").
    prompt = json.dumps(trace.turns[0].request["messages"])
    assert f"model named {MODEL.split('/', 1)[1]}. The exact model ID is intercepted/{MODEL.split('/', 1)[1]}" in prompt
    loaded = load_training_trace(run_dir / "run.training.json")
    assert loaded is not None and loaded.problems == [] and len(loaded.turns) == len(trace.turns)
    metadata = json.loads(result.metadata_path.read_text())
    assert metadata["capture"]["level"] == "tokens" and metadata["capture"]["trainable"] is True
    assert metadata["capture"]["training_trace"] == "run.training.json"
    assert metadata["sandbox"]["opencode_version"] == "1.18.31"
    # OpenCode was given the capture proxy and a session id, never the endpoint or its key.
    provider = metadata["config"]["provider"]["intercepted"]["options"]
    assert provider["baseURL"] != server.base_url and metadata["config"]["model"] == f"intercepted/{MODEL.split('/', 1)[1]}"
    for path in run_dir.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    return metadata


# The real OpenCode: the system prompt's model line and the disabled tools it offers are OpenCode's,
# and this is the module's one trainable episode checked against the real binary.
@pytest.mark.usefixtures("opencode_bin")
def test_live_episode_through_the_capture_proxy_is_trainable_and_flags_the_configuration(tmp_path, sandboxes):
    script = ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl")
    result, recorder, server = run(script, tmp_path / "runs")
    assert result.error is None and result.status == "finished", (result.error, result.status, recorder.stages)
    assert result.grade.env_reward == 1.0
    assert_trainable_episode(result, server, expected_calls=3)
    said = [message for name, _, message in recorder.stages if name == "capture proxy"]
    assert any("capture level tokens: trainable" in message for message in said), said
    assert sandbox_dirs(sandboxes) == []

    checked = run_cli("check", "--json", str(result.trace_path))
    report = json.loads(checked.stdout)
    offered = [f for f in report["findings"] if f["kind"] == "disabled_tool_offered"]
    # OpenCode 1.18.31 under {"permission": {"*": "allow"}} offers what tools: {...: false} disabled.
    assert len(offered) == 1 and "webfetch" in offered[0]["message"] and "task" in offered[0]["message"]
    assert offered[0]["line"] is None and offered[0]["event"] is None
    assert not [f for f in report["findings"] if f["kind"] in ("output_cap_missing", "thinking_enabled")]
    table = run_cli("check", str(result.trace_path))
    assert table.returncode == 0 and "disabled tools task, webfetch offered" in table.stdout, table.stdout


def _repeating_call_id_script() -> ReplayScript:
    """A model that gives its second tool call the id of its first: the seed rejects the trace."""
    def bash(command: str) -> ReplayCall:
        return ReplayCall("call_repeated_0001", "bash", json.dumps({"command": command, "description": "run"}), None, None)

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return ReplayScript(turns=[
        ReplayTurn(0, "", "", (bash("ls /home/user/input"),), "tool_calls", usage),
        ReplayTurn(1, "", "", (bash("echo West > /workdir/answer.txt"),), "tool_calls", usage),
        ReplayTurn(2, "Done: West.", "", (), "stop", usage),
    ])  # fmt: skip


def test_a_repeated_call_id_gives_every_turn_native_tool_calls_none(tmp_path, standin_sandboxes):
    result, _, server = run(_repeating_call_id_script(), tmp_path / "runs")
    assert result.grade.env_reward == 1.0  # the answer is right; training still drops the record
    assert_trainable_episode(result, server, expected_calls=None)


def test_an_endpoint_without_token_ids_is_said_not_trainable(tmp_path, standin_sandboxes):
    result, recorder, server = run(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), tmp_path / "runs",
                                   answer_level="text")  # fmt: skip
    assert result.error is None and result.grade.env_reward == 1.0
    said = [message for name, _, message in recorder.stages if name == "capture proxy"]
    assert any("not trainable: the endpoint returns no token ids" in message for message in said), said
    capture = json.loads(result.metadata_path.read_text())["capture"]
    assert capture["level"] == "text" and capture["trainable"] is False
    assert capture["not_trainable_because"] == "not trainable: the endpoint returns no token ids"
    assert not (result.trace_path.parent / "run.training.json").exists()
    for request in agent_requests(server):  # still training's cap and thinking switch
        assert request["max_tokens"] <= 4096 and request["enable_thinking"] is False


# The real OpenCode: its own request's output budget (32000) and thinking switch are what is checked.
@pytest.mark.usefixtures("opencode_bin")
def test_no_capture_talks_straight_to_the_endpoint_and_check_says_so(tmp_path, sandboxes):
    result, _, server = run(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), tmp_path / "runs", capture=False)
    assert result.error is None and result.grade.env_reward == 1.0
    calls = agent_requests(server)
    # OpenCode's own request: its output budget, thinking left to the model, no token ids asked.
    assert calls and all(request["model"] == MODEL for request in calls)
    assert all(request["max_tokens"] == 32000 for request in calls), calls  # OpenCode 1.18.31's own budget
    assert all(request["enable_thinking"] is None and not request["return_token_ids"] for request in calls)
    assert not (result.trace_path.parent / "run.training.json").exists()
    assert json.loads(result.metadata_path.read_text())["capture"] == {"enabled": False}
    kinds = {f["kind"] for f in json.loads(run_cli("check", "--json", str(result.trace_path)).stdout)["findings"]}
    assert {"output_cap_missing", "thinking_enabled"} <= kinds


def test_daytona_episode_captures_inside_the_sandbox_and_is_trainable(tmp_path, local_daytona):
    """A remote sandbox cannot reach the host: the proxy runs inside it (the real SDK against the
    local Daytona server, whose sandbox commands run here), and the host builds run.training.json
    from what it downloads, as for a local episode."""
    import socket

    from smoldata_tui.sandbox.daytona import DaytonaSettings

    from .test_daytona_episode import FAST

    result, recorder, server = run(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), tmp_path / "runs",
                                   backend="daytona", daytona=DaytonaSettings(**FAST))  # fmt: skip
    assert result.grade.env_reward == 1.0
    metadata = assert_trainable_episode(result, server, expected_calls=3)
    done = [name for name, state, _ in recorder.stages if state == "done"]
    assert done[:3] == ["create sandbox", "install OpenCode", "capture proxy"]
    said = [message for name, _, message in recorder.stages if name == "capture proxy"]
    assert any("is in the sandbox" in message and "nothing to install" in message for message in said), said
    assert any("inside the sandbox" in message for message in said), said
    capture = metadata["capture"]
    assert capture["where"] == "sandbox" and capture["openenv_version"]
    assert capture["training_turns"] == len(agent_requests(server))  # one turn per model call
    provider = metadata["config"]["provider"]["intercepted"]["options"]
    assert provider["baseURL"] == f"http://127.0.0.1:{capture['port']}/v1"
    with pytest.raises(OSError):  # the runner ended with its sandbox
        socket.create_connection(("127.0.0.1", capture["port"]), timeout=5).close()
    assert local_daytona.sandbox_ids() == []


def test_a_cancelled_episode_keeps_its_training_record_and_stops_the_proxy(tmp_path, standin_sandboxes):
    import socket
    import threading
    import time

    from .test_episode_local import _sleeping_recording, processes_matching

    marker = f"capture-cancel-{os.getpid()}"
    endpoint, server = replay_endpoint(ReplayScript.from_trace(_sleeping_recording(tmp_path, marker)))
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                       save_dir=tmp_path / "runs", timeout_s=300)  # fmt: skip
    episode = Episode(spec, Recorder())

    def cancel_inside_the_sleep() -> None:
        deadline = time.monotonic() + 240
        while not processes_matching(marker) and time.monotonic() < deadline:  # the agent is inside its sleep
            time.sleep(0.2)
        episode.cancel()

    threading.Thread(target=cancel_inside_the_sleep, daemon=True).start()
    result = episode.run()
    assert result.status == "cancelled" and processes_matching(marker) == [], result.error
    capture = json.loads(result.metadata_path.read_text())["capture"]
    assert capture["level"] == "tokens" and capture["training_turns"] == 1, json.dumps(capture)  # the running call
    trace = load_training_trace(result.trace_path.parent / "run.training.json")
    seed = seed_outcome(result.trace_path.read_bytes())
    assert [turn["metadata"]["native_tool_calls"] for turn in trace.turns] == [seed.calls] == [None]
    with pytest.raises(OSError):  # the proxy is gone with the episode
        socket.create_connection(("127.0.0.1", capture["port"]), timeout=5).close()
    assert sandbox_dirs(standin_sandboxes) == []
