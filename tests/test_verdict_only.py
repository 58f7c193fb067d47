"""A verdict-only pass (what ``diff --json`` reads with) gives the full pass's verdict, the same
events to an ``on_event`` hook, and the same findings about lines that give no usable event."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from smoldata_tui.trace.analysis import TraceAnalysis

from .test_verdict_matches_seed import trace_bytes

LINE_KINDS = {"malformed_line", "truncated_line", "not_an_object", "bad_part", "undecodable", "wrapper_split"}


def _run(data: bytes, verdict_only: bool):
    seen = []
    analysis = TraceAnalysis(
        on_event=lambda value, line, offset, size, piece: seen.append((repr(value), line, offset, size, piece)),
        verdict_only=verdict_only,
    )
    # Two feeds, so a line cut between chunks is framed the same way in both modes.
    analysis.feed(data[: len(data) // 2])
    analysis.feed(data[len(data) // 2 :])
    return analysis.finish(), seen


def _finding(f):
    return (f.kind, f.line, f.event, f.message)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace_bytes())
def test_verdict_only_matches_the_full_pass(data):
    full, full_seen = _run(data, verdict_only=False)
    light, light_seen = _run(data, verdict_only=True)
    assert light.verdict.native_tool_calls == full.verdict.native_tool_calls
    assert light.verdict.reason == full.verdict.reason
    assert (light.verdict.failure and light.verdict.failure.line) == (full.verdict.failure and full.verdict.failure.line)
    assert light_seen == full_seen
    assert (light.events, light.lines, light.bytes) == (full.events, full.lines, full.bytes)
    light_findings = [_finding(f) for f in light.findings]
    full_findings = [_finding(f) for f in full.findings]
    assert set(light_findings) <= set(full_findings)
    assert [f for f in full_findings if f[0] in LINE_KINDS] == [f for f in light_findings if f[0] in LINE_KINDS]


def test_verdict_only_keeps_no_records():
    with pytest.raises(ValueError):
        TraceAnalysis(keep_events=True, verdict_only=True)
