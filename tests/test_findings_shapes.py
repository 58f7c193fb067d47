"""Failure shapes of the real OpenCode 1.18.31 each get their finding, on recordings made with it.

The recordings in sample_traces/real were made by sample_traces/record_real.py: the replay model
(a scripted OpenAI-compatible endpoint) answers the real binary in a bubblewrap sandbox.
"""

from __future__ import annotations

import json

import pytest

from smoldata_tui.fleet.check import check_one
from smoldata_tui.trace import Severity, analyze_bytes, analyze_path
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.export_doc import account_for_export, sniff_export
from smoldata_tui.trace.seed_rule import seed_outcome
from smoldata_tui.trace.summary import TIMED_OUT, summarize

from .conftest import SAMPLES

REAL = SAMPLES / "real"


def kinds(path):
    report, _ = analyze_path(path)
    return report, [finding.kind for finding in report.findings]


def test_a_dropped_stream_is_one_error_that_counts_the_repeated_steps():
    report, found = kinds(REAL / "stream_dropped.jsonl")
    assert found.count("stream_dropped") == 1
    finding = next(f for f in report.findings if f.kind == "stream_dropped")
    lines = (REAL / "stream_dropped.jsonl").read_bytes().splitlines()
    unknown = [n for n, line in enumerate(lines, 1) if json.loads(line).get("part", {}).get("reason") == "unknown"]
    assert len(unknown) >= 3  # the loop went round several times before the wall-clock limit
    assert finding.severity is Severity.ERROR and finding.line == unknown[0]
    assert f"{len(unknown)} steps ended with finish reason `unknown`" in finding.message
    assert "empty_response" not in found  # a dropped stream is not also an empty answer


def test_an_answer_cut_by_the_length_limit():
    report, found = kinds(REAL / "finish_length.jsonl")
    assert found == ["finish_length"]
    assert report.findings[0].severity is Severity.WARNING
    assert report.verdict.native_tool_calls == 1  # the wrapper accepts it all the same


def test_an_empty_model_answer():
    report, found = kinds(REAL / "empty_response.jsonl")
    assert found == ["empty_response"]
    lines = (REAL / "empty_response.jsonl").read_bytes().splitlines()
    assert json.loads(lines[report.findings[0].line - 1])["type"] == "step_finish"


def test_a_step_with_only_text_or_only_a_call_is_no_empty_answer():
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("ls", "a\n")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    report, _ = analyze_bytes(builder.dumps())
    assert report.findings == []


@pytest.mark.parametrize("kind", [None, "file"])
def test_a_step_with_an_event_of_an_unknown_type_is_no_empty_answer(kind):
    """What the step held cannot be read, so it is not called empty: the unknown type is the finding."""
    builder = TraceBuilder()
    builder.step_start()
    builder.text("the answer is West")["type"] = kind
    builder.step_finish("stop")
    _, found = kinds_of(builder.dumps())
    assert found == ["unknown_event_type"]


def kinds_of(data: bytes):
    report, _ = analyze_bytes(data)
    return report, [finding.kind for finding in report.findings]


def test_a_bash_call_killed_by_its_own_timeout_is_a_finding_and_not_completed():
    report, found = kinds(REAL / "bash_timeout.jsonl")
    assert found == ["bash_timeout"]
    finding = report.findings[0]
    assert "2,000 ms" in finding.message and "sleep 30" in finding.message
    line = (REAL / "bash_timeout.jsonl").read_bytes().splitlines()[finding.line - 1]
    event = json.loads(line)
    assert event["part"]["state"]["status"] == "completed"  # what OpenCode itself says
    assert summarize(event, "tool_use").status == TIMED_OUT  # what the timeline says


def test_a_bash_call_that_exits_normally_is_not_a_timeout():
    _, found = kinds(REAL / "tool_errors.jsonl")
    assert "bash_timeout" not in found


def test_an_export_document_is_recognised_and_opened_converted():
    path = REAL / "export_document.export.json"
    data = path.read_bytes()
    raw, _ = analyze_path(path)
    assert sum(f.kind == "malformed_line" for f in raw.findings) > 50  # what it looked like before
    document = sniff_export(path)
    assert document is not None and document.session_id and document.session_id.startswith("ses_")
    report = account_for_export(path, raw)
    assert report.findings[0].kind == "export_document"
    assert "opencode export" in report.findings[0].message
    assert not any(f.kind == "malformed_line" for f in report.findings)
    # The verdict stays the wrapper's rule on the file's bytes.
    outcome = seed_outcome(data)
    assert report.verdict.native_tool_calls is None and outcome.calls is None
    assert report.verdict.reason == f"{type(outcome.caught).__name__}: {outcome.caught}"
    # The conversion holds the same calls as the run's own stream.
    converted, _ = analyze_bytes(document.dumps())
    stream, _ = analyze_path(REAL / "export_document.jsonl")
    assert converted.verdict.native_tool_calls == stream.verdict.native_tool_calls == 3
    assert converted.stats.calls_by_tool == stream.stats.calls_by_tool
    assert document.prompt and "sales region" in document.prompt


def test_check_says_what_an_export_document_is(tmp_path):
    checked = check_one(REAL / "export_document.export.json")
    assert [f.kind for f in checked.report.findings][:1] == ["export_document"]
    assert not checked.accepted


@pytest.mark.parametrize("name", ["passing_run.jsonl", "stream_dropped.jsonl"])
def test_a_stream_is_no_export_document(name):
    assert sniff_export(REAL / name) is None
