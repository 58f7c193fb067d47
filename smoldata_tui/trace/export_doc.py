"""An ``opencode export`` document given where a ``run --format json`` stream was expected.

``opencode export <sessionID>`` prints one pretty-printed JSON object,
``{"info": {...}, "messages": [{"info": {...}, "parts": [...]}, ...]}``. Read line by line
(as the training wrapper reads a trace) every line of it is malformed, so such a file
would show hundreds of "malformed line" findings that say nothing about what it is.

:func:`sniff_export` recognises the document; :func:`export_events` turns its assistant
messages back into the events ``run --format json`` would have written for them (the
parts are stored in the same shape as the stream carries them), so the viewer can show
it. The verdict on the file itself stays the wrapper's rule on its bytes.

Pure: no Textual; reading is bounded by ``MAX_EXPORT_BYTES``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.text import clip

MAX_EXPORT_BYTES = 256 << 20  # a bigger file is not converted (it is still analysed as a stream)
_SNIFF_BYTES = 64 << 10
# part.type in the export → event type in the stream
_EVENT_TYPES = {
    "step-start": "step_start",
    "text": "text",
    "reasoning": "reasoning",
    "tool": "tool_use",
    "step-finish": "step_finish",
}


@dataclass
class ExportDocument:
    session_id: str | None
    title: str | None
    messages: int
    parts: int
    events: list[dict] = field(repr=False)  # the run --format json events of its assistant messages
    prompt: str | None = None  # the first user message's text
    skipped: dict[str, int] = field(default_factory=dict)  # part types the stream never carries

    def dumps(self) -> bytes:
        """The converted events as JSON Lines."""
        return b"".join(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE) for event in self.events)

    def describe(self) -> str:
        session = f"session {clip(self.session_id, 40)}" if self.session_id else "no session id"
        return (
            f"an `opencode export` document ({session}, {self.messages} message{'s' if self.messages != 1 else ''}, "
            f"{self.parts} part{'s' if self.parts != 1 else ''}), not a `run --format json` stream"
        )


def _may_be_export(head: bytes) -> bool:
    """Cheap first look: a JSON object whose first line is not a whole event."""
    stripped = head.lstrip()
    if not stripped.startswith(b"{"):
        return False
    first_line = stripped.split(b"\n", 1)[0].strip()
    if first_line == b"{":  # pretty-printed: no run --format json line looks like this
        return True
    return b'"messages"' in head and b'"info"' in head and b'"type"' not in first_line[:64]


def sniff_export(path: str | os.PathLike[str]) -> ExportDocument | None:
    """The export document at ``path``, converted; None when the file is not one."""
    try:
        size = os.path.getsize(path)
        if size > MAX_EXPORT_BYTES:
            return None
        with open(Path(path), "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            if not _may_be_export(head):
                return None
            data = head + handle.read()
    except OSError:
        return None
    return parse_export(data)


def parse_export(data: bytes) -> ExportDocument | None:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(document) is not dict or type(document.get("messages")) is not list:
        return None
    info = document.get("info") if type(document.get("info")) is dict else {}
    if not info and not any(type(m) is dict and "parts" in m for m in document["messages"]):
        return None
    return _convert(document, info)


def _convert(document: dict, info: dict) -> ExportDocument:
    session_id = info.get("id") if type(info.get("id")) is str else None
    events: list[dict] = []
    skipped: dict[str, int] = {}
    prompt = None
    parts_seen = 0
    messages = [m for m in document["messages"] if type(m) is dict]
    for message in messages:
        message_info = message.get("info") if type(message.get("info")) is dict else {}
        parts = [p for p in message.get("parts") or [] if type(p) is dict]
        parts_seen += len(parts)
        if message_info.get("role") == "user":
            if prompt is None:
                prompt = "".join(p["text"] for p in parts if p.get("type") == "text" and type(p.get("text")) is str) or None
            continue
        times = message_info.get("time") if type(message_info.get("time")) is dict else {}
        for part in parts:
            kind = _EVENT_TYPES.get(part.get("type"))
            if kind is None:
                name = clip(str(part.get("type")), 30)
                skipped[name] = skipped.get(name, 0) + 1
                continue
            event_session = part.get("sessionID") if type(part.get("sessionID")) is str else session_id
            events.append({"type": kind, "timestamp": _timestamp(part, times), "sessionID": event_session, "part": part})
    title = info.get("title") if type(info.get("title")) is str else None
    return ExportDocument(session_id, title, len(messages), parts_seen, events, prompt, skipped)


def _timestamp(part: dict, message_times: dict) -> int | float | None:
    """When the stream would have written the part: when it ended (a tool when it settled)."""
    state = part.get("state") if type(part.get("state")) is dict else {}
    for times in (part.get("time"), state.get("time")):
        if type(times) is dict:
            for key in ("end", "start"):
                if type(times.get(key)) in (int, float):
                    return times[key]
    key = "completed" if part.get("type") == "step-finish" else "created"
    value = message_times.get(key)
    return value if type(value) in (int, float) else None


def export_finding(document: ExportDocument, verdict_reason: str) -> Finding:
    """The one finding that replaces the file's malformed lines."""
    return Finding(
        "export_document",
        Severity.ERROR,
        1,
        None,
        f"this file is {document.describe()}; the training wrapper reads it line by line and gives "
        f"{verdict_reason}. It is shown converted: {len(document.events)} events from its assistant messages",
    )


def account_for_export(path: str | os.PathLike[str], report):
    """``report`` of the file at ``path``; when the file is an export document, its malformed-line
    findings give way to one ``export_document`` finding plus the findings of the converted events
    (their lines are those of the converted stream). The verdict stays the one on the file's bytes.
    """
    from smoldata_tui.trace.analysis import TraceReport, analyze_bytes

    if report.verdict.failure is None:
        return report  # the wrapper accepted it: a stream, whatever else it is
    document = sniff_export(path)
    if document is None:
        return report
    converted, _ = analyze_bytes(document.dumps())
    findings = [export_finding(document, report.verdict.badge())]
    for finding in converted.findings:
        finding.message = f"in the converted export: {finding.message}"
        findings.append(finding)
    return TraceReport(report.verdict, findings, converted.stats, converted.events, report.lines, report.bytes)
