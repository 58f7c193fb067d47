"""The replay model driving the real OpenCode 1.18.31 binary, end to end.

Each test runs ``opencode run --format json`` (the environment's command line, in a temporary
HOME) against a :class:`ReplayServer` on 127.0.0.1 and checks what really happened: the
calls OpenCode made, the files its tools wrote, the trace it printed, and what the server
reported as divergent.
"""

from __future__ import annotations

import json

import orjson
import pytest

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import END_OF_RECORDING_TEXT, ReplayServer
from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace.build import TraceBuilder

from .opencode_fixture import FAKE_API_KEY, opencode_bin, prepare_home, run_agent  # noqa: F401 - fixture

INSTRUCTION = "Find the region with the highest revenue and write it to answer.txt"
SALES = "region,revenue\nWest,1177.85\nSouth,912.30\n"


def recording(*, finished: bool = True) -> bytes:
    """Step 1: list the input, read the CSV, write the answer (parallel calls); step 2: stop."""
    b = TraceBuilder()
    b.step_start()
    b.text("Let me look at the input.")
    b.bash("ls input", "sales.csv\n")
    b.bash("cat input/sales.csv", SALES)
    b.tool("write", {"filePath": "answer.txt", "content": "West\n"}, "Wrote file successfully.")
    b.step_finish("tool-calls", input_tokens=1200, output_tokens=40, reasoning_tokens=7, cache_read=300)
    if finished:
        b.step_start()
        b.text("West has the highest revenue.")
        b.step_finish("stop")
    return b.dumps()


def events(trace: bytes, kind: str) -> list[dict]:
    return [event for event in map(orjson.loads, trace.splitlines()) if event.get("type") == kind]


def calls(trace: bytes) -> list[tuple[str, str, dict]]:
    parts = [event["part"] for event in events(trace, "tool_use")]
    return sorted((part["callID"], part["tool"], part["state"]["input"]) for part in parts)


def replay(tmp_path, binary, trace: bytes, files: dict[str, str], *, home_name: str = "home"):
    home = prepare_home(tmp_path / home_name, INSTRUCTION, files)
    divergence_file = tmp_path / f"{home_name}.divergence.jsonl"
    with ReplayServer(ReplayScript.from_trace(trace), divergence_path=divergence_file) as server:
        run = run_agent(binary, home, server.base_url)
        summary = server.summary()
        divergences = server.divergences
    return run, summary, divergences, divergence_file


@pytest.fixture(scope="module")
def clean_replay(tmp_path_factory, opencode_bin):  # noqa: F811 - the imported fixture
    tmp_path = tmp_path_factory.mktemp("clean")
    return replay(tmp_path, opencode_bin, recording(), {"input/sales.csv": SALES})


def test_replay_reexecutes_the_recorded_calls(clean_replay):
    run, summary, divergences, _ = clean_replay
    assert run.returncode == 0, run.trace[-2000:]
    assert calls(run.trace) == calls(recording())  # same call ids, tool names and inputs
    assert (run.workdir / "answer.txt").read_text() == "West\n"  # the write really ran
    assert [e["part"]["text"] for e in events(run.trace, "text")] == [
        "Let me look at the input.",
        "West has the highest revenue.",
    ]
    assert divergences == []
    assert summary == {
        "recorded_turns": 2,
        "turns_served": 2,
        "side_requests": 1,  # the session title
        "extra_requests": 0,
        "changed_results": 0,
    }


def test_replayed_steps_report_the_recorded_tokens(clean_replay):
    run = clean_replay[0]
    finishes = [e["part"] for e in events(run.trace, "step_finish")]
    recorded = [e["part"] for e in events(recording(), "step_finish")]
    assert [f["reason"] for f in finishes] == ["tool-calls", "stop"]
    assert [f["tokens"] for f in finishes] == [
        {**r["tokens"], "cache": {"read": r["tokens"]["cache"]["read"], "write": 0}} for r in recorded
    ]


def test_replayed_trace_gets_the_recordings_wrapper_verdict(clean_replay):
    run = clean_replay[0]
    replayed, _ = analyze_bytes(run.trace)
    recorded, _ = analyze_bytes(recording())
    assert replayed.verdict.native_tool_calls == recorded.verdict.native_tool_calls == 3


def test_api_key_reaches_only_opencode_json(clean_replay):
    run, _, _, divergence_file = clean_replay
    assert FAKE_API_KEY in (run.home / ".config/opencode/opencode.json").read_text()
    assert FAKE_API_KEY.encode() not in run.trace
    assert not divergence_file.exists() or FAKE_API_KEY not in divergence_file.read_text()


def test_changed_environment_is_reported_as_a_divergence(tmp_path, opencode_bin):  # noqa: F811
    changed = "region,revenue\nWest,10.00\nSouth,912.30\n"
    run, summary, divergences, divergence_file = replay(
        tmp_path, opencode_bin, recording(), {"input/sales.csv": changed}
    )
    assert run.returncode == 0
    cat_call = next(call_id for call_id, _, args in calls(recording()) if args.get("command") == "cat input/sales.csv")
    assert divergences == [
        {"kind": "result_changed", "turn": 0, "call_id": cat_call, "tool": "bash", "recorded": SALES, "now": changed}
    ]
    assert [json.loads(line) for line in divergence_file.read_text().splitlines()] == divergences
    assert summary["changed_results"] == 1


def test_recording_shorter_than_the_run_ends_with_extra_request(tmp_path, opencode_bin):  # noqa: F811
    run, summary, divergences, _ = replay(tmp_path, opencode_bin, recording(finished=False), {"input/sales.csv": SALES})
    assert run.returncode == 0
    assert divergences == [{"kind": "extra_request", "turn": 1, "recorded_turns": 1}]
    assert events(run.trace, "text")[-1]["part"]["text"] == END_OF_RECORDING_TEXT
    assert events(run.trace, "step_finish")[-1]["part"]["reason"] == "stop"
    assert summary["turns_served"] == 1


def test_a_real_opencode_trace_replays_without_divergence_elsewhere(tmp_path, opencode_bin):  # noqa: F811
    """Record with the real binary in one HOME, replay that trace in another one.

    The recording holds what OpenCode itself makes of awkward calls: a relative read (output
    with the absolute path), an output truncated into a saved file, a tool error, an unknown
    tool and arguments that are not JSON. None of that may count as a divergence.
    """
    files = {"notes.txt": "hello\n"}
    b = TraceBuilder()
    b.step_start()
    b.tool("read", {"filePath": "notes.txt"}, "")
    # 2,500 lines: over OpenCode's 2,000-line limit, under a pipe buffer. (With 40,000 lines,
    # OpenCode 1.18.31 under load sometimes loses the output's tail: a real divergence.)
    b.bash("seq 1 2500", "")
    b.tool("read", {"filePath": "missing.txt"}, "")
    b.invalid("python", "Model tried to call unavailable tool 'python'.")
    b.invalid("bash", "Invalid input for tool bash: JSON parsing failed: Text: {not json.\nError message: x")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("done")
    b.step_finish("stop")
    first, _, _, _ = replay(tmp_path, opencode_bin, b.dumps(), files, home_name="first")
    assert first.returncode == 0
    parts = [event["part"] for event in events(first.trace, "tool_use")]
    assert sorted((part["tool"], part["state"]["status"]) for part in parts) == [
        ("bash", "completed"),
        ("invalid", "completed"),
        ("invalid", "completed"),
        ("read", "completed"),
        ("read", "error"),
    ]

    second, summary, divergences, _ = replay(tmp_path, opencode_bin, first.trace, files, home_name="second")
    assert second.returncode == 0
    assert divergences == []
    assert calls(second.trace) == calls(first.trace)
    assert summary["turns_served"] == 2
    assert analyze_bytes(second.trace)[0].verdict.native_tool_calls == 5
