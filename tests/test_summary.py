"""The one-line row text (trace/summary.py) and the detail sections (trace/event_detail.py) of
each event shape."""

from __future__ import annotations

import orjson
import pytest

from smoldata_tui.trace import analyze_path
from smoldata_tui.trace.analysis import MALFORMED, NOT_AN_OBJECT
from smoldata_tui.trace.build import ABSENT, TraceBuilder
from smoldata_tui.trace.event_detail import detail_sections
from smoldata_tui.trace.finding_labels import finding_badge
from smoldata_tui.trace.findings import Finding, Severity
from smoldata_tui.trace.number_format import format_duration, format_offset
from smoldata_tui.trace.summary import UNFINISHED, parse_line, summarize, summarize_line

from .conftest import SAMPLES


def line_of(event: dict) -> bytes:
    return orjson.dumps(event)


def test_bash_call_row_shows_title_command_status_and_duration():
    b = TraceBuilder()
    b.step_start()
    event = b.bash("ls -la /home/user/input", "a\nb\n", description="List input files", duration_ms=40)
    row = summarize_line(line_of(event), "tool_use")
    assert row.title == "List input files"
    assert row.detail == "$ ls -la /home/user/input"
    assert row.status == "completed"
    assert row.duration_ms == 40
    assert not row.is_error


def test_failed_call_row_leads_with_the_error():
    b = TraceBuilder()
    b.step_start()
    event = b.tool("read", {"filePath": "/nope"}, status="error", error="File not found: /nope")
    row = summarize_line(line_of(event), "tool_use")
    assert row.is_error and row.status == "error"
    assert row.title == "File not found: /nope"
    assert row.detail == "/nope"


@pytest.mark.parametrize("state", [ABSENT, {"status": "running", "input": {"filePath": "/x"}}])
def test_unfinished_calls_are_marked(state):
    b = TraceBuilder()
    b.step_start()
    event = b.tool("read", {"filePath": "/x"}, state=state)
    row = summarize_line(line_of(event), "tool_use")
    assert row.status == UNFINISHED


def test_step_finish_row_has_reason_tokens_and_step_duration():
    b = TraceBuilder()
    start = b.step_start()
    b.text("hi")
    event = b.step_finish("stop", input_tokens=1200, output_tokens=34, cost=0.0123)
    row = summarize_line(line_of(event), "step_finish", step_started_ms=start["timestamp"])
    assert row.title == "stop"
    assert "in 1,200" in row.detail and "out 34" in row.detail and "$0.0123" in row.detail
    assert row.duration_ms == event["timestamp"] - start["timestamp"]


def test_error_event_and_text_rows():
    b = TraceBuilder()
    error = b.error("APIError", "Bad Request: model not found")
    assert summarize_line(line_of(error), "error").title == "APIError: Bad Request: model not found"
    text = b.text("first line\nsecond line")
    assert summarize_line(line_of(text), "text").title == "first line \u2026"


def test_malformed_and_non_object_lines():
    assert summarize_line(b"npm warn deprecated", MALFORMED).title == "npm warn deprecated"
    assert summarize_line(b"42", NOT_AN_OBJECT).title == "42"
    sections = detail_sections(parse_line(b"npm warn"), MALFORMED)
    assert sections[0].style == "error" and sections[1].body == "npm warn"


def test_titles_are_neutralised_single_lines():
    b = TraceBuilder()
    b.step_start()
    event = b.bash("echo hi", "x", description="evil \x1b[31m[bold]red[/bold]\x07\nsecond")
    row = summarize_line(line_of(event), "tool_use")
    assert "\x1b" not in row.title and "\x07" not in row.title and "\n" not in row.title
    assert "\u241b" in row.title  # ␛ is shown, not interpreted
    assert "[bold]" in row.title  # markup is plain text here; the UI never parses it


def test_detail_sections_of_a_call_are_complete():
    b = TraceBuilder()
    b.step_start()
    big = "x" * 300_000 + "\nend"
    event = b.bash("python3 big.py", big, description="Run it")
    sections = {s.title: s for s in detail_sections(parse_line(line_of(event)), "tool_use")}
    assert sections["Command"].body == "python3 big.py"
    assert sections["Output"].body == big  # untruncated
    assert "exit" in sections["Metadata"].body and big not in sections["Metadata"].body


def test_pieces_of_a_split_line_decode_separately():
    raw = b'{"type":"text","part":{"text":"a"}}\r{"type":"text","part":{"text":"b"}}'
    assert parse_line(raw, 2).value == {"type": "text", "part": {"text": "b"}}


def test_every_sample_line_summarises_without_error():
    for path in sorted(SAMPLES.glob("*.jsonl")):
        _report, analysis = analyze_path(path, keep_events=True)
        data = path.read_bytes()
        for record in analysis.events:
            raw = data[record.offset : record.offset + record.length]
            summarize_line(raw, record.kind, record.piece)
            detail_sections(parse_line(raw, record.piece), record.kind)


def test_formats_are_deterministic_and_short():
    assert format_offset(0) == "+0.000s"
    assert format_offset(12_345) == "+12.345s"
    assert format_offset(123_456) == "+123.5s"
    assert format_offset(None) == ""
    assert format_duration(850) == "850ms"
    assert format_duration(12_300) == "12.3s"
    assert format_duration(245_000) == "4m05s"
    assert format_duration(7_380_000) == "2h03m"


def test_badges_point_duplicates_at_their_twin():
    dup = Finding("duplicate_call_id", Severity.ERROR, 9, 5, "callID x repeats the one on line 4", 4)
    assert finding_badge(dup) == "dup\u2192L4"
    assert finding_badge(Finding("nonzero_exit", Severity.INFO, 3, 2, "bash exited with 1")) == "exit 1"


def test_summarize_tolerates_odd_shapes():
    assert summarize({"type": "tool_use", "part": "nope"}, "tool_use").is_error
    assert summarize({"type": "tool_use", "part": {"tool": "x", "state": None}}, "tool_use").is_error
    assert summarize({"type": "done", "reason": "idle"}, "done").title == "{reason}"
    assert summarize([1, 2], NOT_AN_OBJECT).is_error
