"""Findings → short words on screen: a badge for a finding's timeline row, and the status the
findings give the whole episode when no metadata file says it.
"""

from __future__ import annotations

from smoldata_tui.trace.findings import Finding
from smoldata_tui.trace.text import clip


def infer_status(findings: list[Finding], *, ended: bool, events: int | None = None) -> str:
    """running / finished / killed / error / empty / not a trace, from the trace alone (no metadata
    file); ``events``: how many of its lines were event objects, when known."""
    if not ended:
        return "running"
    kinds = {finding.kind for finding in findings}
    if "empty_stream" in kinds:
        return "empty"
    if events == 0:  # lines, but none an event (a log, random bytes): nothing was killed
        return "not a trace"
    if "error_event" in kinds:
        return "error"
    if "last_step_unfinished" in kinds or "no_step_finish" in kinds:
        return "killed"
    return "finished"


_BADGES = {
    "duplicate_call_id": "dup",
    "missing_call_id": "no id",
    "unfinished_call": "unfinished",
    "wrapper_crash": "crash",
    "wrapper_split": "split",
    "undecodable": "bad utf-8",
    "malformed_line": "not json",
    "truncated_line": "truncated",
    "not_an_object": "not object",
    "bad_part": "bad part",
    "tool_error": "tool error",
    "invalid_tool": "invalid tool",
    "nonzero_exit": "exit",
    "time_backwards": "time back",
    "multiple_sessions": "new session",
    "unmatched_step": "unmatched",
    "last_step_unfinished": "last step open",
    "unknown_event_type": "unknown type",
    "error_event": "error",
    "bash_timeout": "timed out",
    "finish_length": "cut off",
    "empty_response": "empty answer",
    "stream_dropped": "no finish reason",
    "export_document": "export doc",
}


def finding_badge(finding: Finding) -> str:
    """A short tag for the timeline row: ``dup→L12``, ``no id``, ``exit 1`` ..."""
    label = _BADGES.get(finding.kind, finding.kind.replace("_", " "))
    if finding.kind == "duplicate_call_id" and finding.related_line:
        return f"{label}\u2192L{finding.related_line}"
    if finding.kind == "nonzero_exit":
        code = finding.message.rsplit(" ", 1)[-1]
        return f"exit {clip(code, 6)}"
    return label
