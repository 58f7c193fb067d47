"""A recorded trace becomes the model's turns: text, calls, finish reasons, usage, and notes on
what cannot come back exactly."""

from __future__ import annotations

import json

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.trace.build import ABSENT, TraceBuilder

from .conftest import SAMPLES


def test_sample_clean_pass_becomes_four_turns():
    script = ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl")
    assert [turn.finish_reason for turn in script.turns] == ["tool_calls", "tool_calls", "tool_calls", "stop"]
    assert [[call.name for call in turn.calls] for turn in script.turns] == [["bash"], ["bash"], ["write"], []]
    first = script.turns[0].calls[0]
    assert json.loads(first.arguments) == {"command": "ls -la /home/user/input", "description": "List input files"}
    assert first.output.endswith("sales_2024.csv\n") and first.status == "completed"
    assert script.turns[-1].text
    assert script.notes == []


def test_parallel_calls_keep_call_order_not_completion_order():
    b = TraceBuilder()
    b.step_start()
    first = b.bash("sleep 1; echo slow", "slow\n", call_id="call_slow")
    second = b.bash("echo fast", "fast\n", call_id="call_fast")
    b.step_finish("tool-calls")
    # OpenCode writes tool_use lines as calls complete: the fast one first.
    b.events[1], b.events[2] = second, first
    script = ReplayScript.from_trace(b.dumps())
    assert [call.call_id for call in script.turns[0].calls] == ["call_slow", "call_fast"]


def test_usage_counts_cached_and_reasoning_tokens_in():
    b = TraceBuilder()
    b.step_start()
    b.text("hi")
    b.step_finish("stop", input_tokens=100, output_tokens=20, reasoning_tokens=5, cache_read=50)
    b.step_start()
    b.text("no usage")
    b.step_finish("stop", total_tokens=ABSENT)
    turns = ReplayScript.from_trace(b.dumps()).turns
    assert turns[0].usage == {
        "prompt_tokens": 150,
        "completion_tokens": 25,
        "total_tokens": 175,
        "prompt_tokens_details": {"cached_tokens": 50},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    assert turns[1].usage is None  # the provider sent none: neither do we


def test_errors_and_invalid_calls_are_sent_as_the_model_sent_them():
    b = TraceBuilder()
    b.step_start()
    b.tool("read", {"filePath": "/nope"}, status="error", error="File not found: /nope", call_id="c1")
    parse_error = "Invalid input for tool bash: JSON parsing failed: Text: {not json.\nError message: x"
    b.invalid("bash", parse_error, call_id="c2")
    b.invalid("python", "Model tried to call unavailable tool 'python'.", call_id="c3")
    b.step_finish("tool-calls")
    script = ReplayScript.from_trace(b.dumps())
    read, bad_json, unknown = script.turns[0].calls
    assert (read.name, read.arguments) == ("read", '{"filePath":"/nope"}')
    assert (read.output, read.status) == ("File not found: /nope", "error")
    assert (bad_json.name, bad_json.arguments) == ("bash", "{not json")
    assert (unknown.name, unknown.arguments) == ("python", "{}")
    assert any("'python'" in note for note in script.notes)


def test_unusable_call_ids_are_replaced_and_noted():
    b = TraceBuilder()
    b.step_start()
    b.bash("ls", "", call_id="call_0")
    b.bash("pwd", "", call_id="call_0")
    b.bash("id", "", call_id=ABSENT)
    b.step_finish("tool-calls")
    script = ReplayScript.from_trace(b.dumps())
    ids = [call.call_id for call in script.turns[0].calls]
    assert ids[0] == "call_0" and len(set(ids)) == 3
    assert sum("missing or repeated" in note for note in script.notes) == 2


def test_cut_off_steps_odd_finishes_and_other_sessions():
    b = TraceBuilder()
    b.step_start()
    b.bash("ls", "a\n")
    b.step_finish("unknown")
    b.step_start()  # killed before the model answered
    b.error("APIError", "Bad Request")
    other = TraceBuilder(session_id="ses_other")
    other.step_start()
    other.text("another run")
    other.step_finish("stop")
    data = b.dumps() + b"not json at all\n" + other.dumps()
    script = ReplayScript.from_trace(data)
    assert len(script.turns) == 1
    assert script.turns[0].finish_reason == "tool_calls"  # never a stream without a finish reason
    assert script.session_id == b.session_id
    notes = " | ".join(script.notes)
    assert "cut off" in notes and "'unknown'" in notes and "not JSON" in notes and "other sessions" in notes


def test_recorded_workdir_is_learned_from_relative_file_paths(tmp_path):
    b = TraceBuilder()
    b.step_start()
    b.tool("write", {"filePath": "out/answer.txt", "content": "x"}, "Wrote file successfully.",
           metadata={"filepath": "/root/workdir/out/answer.txt"})
    b.step_finish("tool-calls")
    path = tmp_path / "run.jsonl"
    path.write_bytes(b.dumps())
    assert ReplayScript.from_trace(path).workdir == "/root/workdir"
    assert ReplayScript.from_trace(str(path)).workdir == "/root/workdir"
