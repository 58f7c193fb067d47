"""Findings and stats: each points at the right line and says the right thing."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.trace import Severity, TraceAnalysis, analyze_bytes
from smoldata_tui.trace.build import ABSENT, TraceBuilder
from smoldata_tui.trace.build_json import dumps_event


def one_step(builder: TraceBuilder, *calls: dict) -> None:
    builder.step_start()
    for call in calls:
        builder.tool(**call)
    builder.step_finish("stop")


def kinds(report) -> list[str]:
    return [finding.kind for finding in report.findings]


def by_kind(report, kind):
    return [finding for finding in report.findings if finding.kind == kind]


def test_clean_episode_has_no_findings_and_full_stats():
    b = TraceBuilder()
    b.step_start()
    b.text("Looking at the input.")
    b.bash("ls /home/user/input", "sales.csv\n", duration_ms=50)
    b.tool("read", {"filePath": "/home/user/input/sales.csv"}, "a,b\n1,2\n", duration_ms=30)
    b.step_finish("tool-calls", input_tokens=100, output_tokens=20, cache_read=7, cost=0.25)
    b.step_start()
    b.text("Done.")
    b.step_finish("stop", input_tokens=50, output_tokens=5, reasoning_tokens=3, cost=0.5)
    report, _ = analyze_bytes(b.dumps())
    assert report.findings == []
    assert report.verdict.native_tool_calls == 2
    stats = report.stats
    assert stats.steps == 2 and stats.steps_finished == 2
    assert dict(stats.calls_by_tool) == {"bash": 1, "read": 1}
    assert dict(stats.calls_by_status) == {"completed": 2}
    assert stats.tokens["input"] == 150 and stats.tokens["output"] == 25
    assert stats.tokens["reasoning"] == 3 and stats.tokens["cache_read"] == 7
    assert stats.cost == pytest.approx(0.75)
    assert sorted(stats.call_durations_ms) == [30, 50]
    assert len(stats.step_durations_ms) == 2
    assert stats.tool_time_ms == 80  # the two calls ran one after the other inside step 1
    assert stats.model_time_ms == pytest.approx(sum(stats.step_durations_ms) - 80)
    assert stats.wall_time_ms == b.events[-1]["timestamp"] - b.events[0]["timestamp"]


@pytest.mark.parametrize(
    "call_id, words",
    [(ABSENT, "has no callID"), (None, "has callID null"), ("", 'has callID ""'), (0, "which is falsy"), (False, "which is falsy")],
)
def test_missing_call_id_variants(call_id, words):
    b = TraceBuilder()
    one_step(b, {"tool": "bash", "input": {"command": "ls"}, "output": "", "call_id": call_id})
    report, _ = analyze_bytes(b.dumps())
    [finding] = by_kind(report, "missing_call_id")
    assert finding.line == 2 and finding.event == 1 and finding.severity is Severity.ERROR
    assert words in finding.message
    assert report.verdict.native_tool_calls is None


def test_duplicates_tell_a_re_emission_from_a_reused_id():
    b = TraceBuilder()
    b.step_start()
    first = b.bash("ls", "a\n")  # line 2
    b.raw(copy.deepcopy(first))  # line 3: the identical part again
    changed = copy.deepcopy(first)
    changed["part"]["state"]["output"] = "different output"
    changed["part"]["state"]["title"] = "other"
    b.raw(changed)  # line 4: same part id, new content
    b.tool("read", {"filePath": "/x"}, "x", call_id=first["part"]["callID"])  # line 5: another call
    b.step_finish("stop")
    report, _ = analyze_bytes(b.dumps())
    duplicates = by_kind(report, "duplicate_call_id")
    assert [d.line for d in duplicates] == [3, 4, 5]
    assert all(d.related_line == 2 for d in duplicates)
    assert "identical re-emission" in duplicates[0].message
    assert "same part re-emitted with different content" in duplicates[1].message
    assert "a different call (read) reusing the id of a bash call" in duplicates[2].message
    assert report.verdict.failure.line == 3


def test_unfinished_and_stateless_calls():
    b = TraceBuilder()
    one_step(
        b,
        {"tool": "bash", "input": {"command": "sleep 100"}, "status": "running"},
        {"tool": "read", "input": {"filePath": "/x"}, "state": ABSENT},
    )
    report, _ = analyze_bytes(b.dumps())
    unfinished = by_kind(report, "unfinished_call")
    assert [u.line for u in unfinished] == [2, 3]
    assert "status 'running'" in unfinished[0].message and "no state" in unfinished[1].message
    assert report.verdict.reason == "ValueError: Unfinished tool action"


def test_crlf_line_endings_are_not_a_wrapper_split():
    b = TraceBuilder()
    one_step(b, {"tool": "bash", "input": {"command": "ls"}, "output": "x"})
    data = b.dumps().replace(b"\n", b"\r\n")
    report, _ = analyze_bytes(data)
    assert "wrapper_split" not in kinds(report)
    assert report.verdict.native_tool_calls == 1


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_unicode_line_separators_in_output_split_the_wrapper(separator):
    b = TraceBuilder()
    one_step(b, {"tool": "read", "input": {"filePath": "/x"}, "output": f"first{separator}second"})
    report, analysis = analyze_bytes(b.dumps(), keep_events=True)
    [split] = by_kind(report, "wrapper_split")
    assert split.line == 2 and split.event == 1
    assert "2 pieces" in split.message
    assert report.verdict.native_tool_calls is None and report.verdict.failure.line == 2
    # The timeline still shows the call as one tool_use event (a newline-framed reader's view).
    assert [record.kind for record in analysis.events] == ["step_start", "tool_use", "step_finish"]


def test_steps_without_a_match_and_an_unfinished_last_step():
    b = TraceBuilder()
    b.step_start()  # line 1: never finished, not the last
    b.text("thinking")
    b.step_start()  # line 3
    b.step_finish("tool-calls")  # line 4
    b.step_start()  # line 5: the last step, killed
    b.bash("sleep 1", "")
    report, _ = analyze_bytes(b.dumps())
    assert [(f.kind, f.line) for f in report.findings if "step" in f.kind] == [
        ("unmatched_step", 1),
        ("last_step_unfinished", 5),
    ]
    assert by_kind(report, "last_step_unfinished")[0].severity is Severity.WARNING
    assert report.verdict.native_tool_calls == 1  # the wrapper accepts a killed last step


def test_error_event_messages_are_neutralised():
    b = TraceBuilder()
    b.step_start()
    b.error("APIError", "bad \x1b[31mred\x1b[0m\x07 [bold]markup[/bold]\r\nnext")
    report, _ = analyze_bytes(b.dumps())
    [error] = by_kind(report, "error_event")
    assert error.line == 2
    assert "\x1b" not in error.message and "\x07" not in error.message and "\r" not in error.message
    assert "\u241b[31mred" in error.message  # visible ␛, not an escape sequence
    assert "[bold]markup[/bold]" in error.message  # kept as plain text; the renderers never parse markup


def test_unknown_types_are_kept_and_counted_once():
    b = TraceBuilder()
    one_step(b)
    for _ in range(3):
        b.event("done", reason="idle", rejected=[])
    report, analysis = analyze_bytes(b.dumps(), keep_events=True)
    [unknown] = by_kind(report, "unknown_event_type")
    assert unknown.line == 3 and "3 lines" in unknown.message
    assert report.stats.events_by_type["done"] == 3
    assert [record.kind for record in analysis.events][-3:] == ["done"] * 3


def test_time_backwards_and_multiple_sessions_point_back():
    b = TraceBuilder()
    b.step_start()
    late = b.text("late")
    late["timestamp"] -= 5000
    other = TraceBuilder(session_id="ses_other", start_ms=b.clock_ms)
    other.step_start()
    data = b.dumps() + other.dumps()
    report, _ = analyze_bytes(data)
    [backwards] = by_kind(report, "time_backwards")
    assert backwards.line == 2 and backwards.related_line == 1
    [sessions] = by_kind(report, "multiple_sessions")
    assert sessions.line == 3 and sessions.related_line == 1 and "ses_other" in sessions.message


def test_verdict_so_far_follows_a_live_stream():
    b = TraceBuilder()
    b.step_start()
    b.bash("ls", "x")
    b.step_finish("stop")
    lines = [dumps_event(event) for event in b.events]
    live = TraceAnalysis(keep_events=True)
    assert live.feed(lines[0] + lines[1][:10]) == 1
    assert live.verdict().native_tool_calls is None  # no step_finish yet
    assert live.feed(lines[1][10:]) == 1
    assert live.feed(lines[2]) == 1
    assert live.verdict().native_tool_calls == 1
    assert [record.line for record in live.events] == [1, 2, 3]
    assert [record.offset for record in live.events] == [0, len(lines[0]), len(lines[0]) + len(lines[1])]
    assert live.events[1].tool == "bash" and live.events[1].status == "completed" and live.events[1].step == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
keys = st.sampled_from(["type", "part", "state", "status", "callID", "tool", "messageID", "timestamp",
                        "sessionID", "time", "start", "end", "tokens", "cache", "metadata", "exit", "error", "data"])
event_like = st.recursive(
    json_values,
    lambda inner: st.dictionaries(keys, inner | st.sampled_from(["tool_use", "step_start", "step_finish", "error",
                                                                  "completed", "running"]), max_size=6),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(event_like, max_size=8))
def test_any_json_values_as_events_never_break_the_analysis(values):
    # Whatever shape the JSON has, the analysis reports findings; it never raises.
    data = b"".join(json.dumps(value).encode() + b"\n" for value in values)
    report, _ = analyze_bytes(data)
    assert report.events == len(values)
    for finding in report.findings:
        assert finding.message
