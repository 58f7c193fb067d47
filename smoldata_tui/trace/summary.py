"""One event → what a person reads about it: a one-line title, a duration, detail sections.

Pure functions over decoded JSON values (no I/O, no Textual). The timeline calls
:func:`summarize_line` for the rows on screen only, and the detail pane calls
:func:`detail_sections` for the selected event.

Titles are safe to show as they are (control characters neutralised, clipped to one
line). Detail bodies are the full, untruncated strings of the event: the caller
neutralises them line by line when it lays them out, because it also splits them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import orjson

from smoldata_tui.trace.analysis import MALFORMED, NOT_AN_OBJECT
from smoldata_tui.trace.call_checks import bash_timeout_ms
from smoldata_tui.trace.findings import Finding
from smoldata_tui.trace.parse import parse_exactly
from smoldata_tui.trace.text import clip

TITLE_LIMIT = 400  # characters kept of a row's title: more never fits a terminal row
UNFINISHED = "unfinished"  # the status shown for a call that never reached completed/error
TIMED_OUT = "timed out"  # a bash call its own timeout killed (OpenCode says "completed")


@dataclass(frozen=True, slots=True)
class EventSummary:
    """What one timeline row says about an event."""

    title: str  # the headline: a tool's title, the text's first line, the error ...
    detail: str = ""  # a dimmer second part: the command, the path, the token counts ...
    status: str | None = None  # completed / error / unfinished for calls, None otherwise
    duration_ms: float | None = None
    is_error: bool = False  # the event reports a failure (tool error, error event)


@dataclass(frozen=True, slots=True)
class DetailSection:
    """One titled block of the detail pane. ``body`` is raw, untrusted text."""

    title: str
    body: str
    style: str = "plain"  # plain / code / output / error / json / muted


@dataclass(slots=True)
class Parsed:
    """A line decoded for display: the JSON value, or why there is none."""

    value: object = None
    error: str | None = None  # the parse error when the line is not JSON
    text: str = ""  # the line as text (decoded with replacement characters)
    pieces: list[object] = field(default_factory=list)


# --- decoding ------------------------------------------------------------------------------------
def parse_line(raw: bytes, piece: int = 0) -> Parsed:
    """Decode one physical line; ``piece`` > 0 picks one of the events the wrapper cut it into."""
    if piece == 0:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            return Parsed(value=value)
    exact = parse_exactly(raw)
    text = raw.decode("utf-8", "replace")
    events = exact.events
    if piece and 0 < piece <= len(events):
        chosen = events[piece - 1]
    elif events:
        chosen = events[0]
    else:
        return Parsed(error="blank line", text=text)
    if chosen.error is not None:
        return Parsed(error=f"{type(chosen.error).__name__}: {chosen.error}", text=chosen.text or text)
    return Parsed(value=chosen.value, text=text)


# --- numbers -------------------------------------------------------------------------------------
def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def format_offset(ms: float | None) -> str:
    """Time since the trace's first event: ``+12.345s``; blank when unknown."""
    if ms is None:
        return ""
    sign = "-" if ms < 0 else "+"
    seconds = abs(ms) / 1000
    if seconds < 100:
        return f"{sign}{seconds:.3f}s"
    if seconds < 10_000:
        return f"{sign}{seconds:.1f}s"
    return f"{sign}{seconds:.0f}s"


def format_duration(ms: float | None) -> str:
    """A short duration: ``850ms``, ``12.3s``, ``4m05s``, ``2h03m``; blank when unknown."""
    if ms is None or ms < 0:
        return ""
    if ms < 1000:
        return f"{ms:.0f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_count(value: float) -> str:
    """``12,345`` for whole numbers, ``1.5`` otherwise."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


# --- one-line summaries --------------------------------------------------------------------------
def _first_line(text: str) -> str:
    stripped = text.strip()
    end = stripped.find("\n")
    first = stripped if end == -1 else stripped[:end] + " \u2026"
    return clip(first, TITLE_LIMIT)


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


_INPUT_KEYS = ("command", "filePath", "path", "pattern", "url", "query", "description", "prompt")


def input_digest(tool: object, tool_input: object) -> str:
    """The one argument that says what a call did (the command, the path, the pattern ...)."""
    if not isinstance(tool_input, dict):
        return clip(repr(tool_input), TITLE_LIMIT) if tool_input is not None else ""
    if tool == "bash" and _string(tool_input.get("command")):
        return "$ " + _first_line(tool_input["command"])
    if tool == "invalid":
        return _first_line(str(tool_input.get("tool") or tool_input.get("error") or ""))
    for key in _INPUT_KEYS:
        text = _string(tool_input.get(key))
        if text:
            return _first_line(text)
    if not tool_input:
        return ""
    return clip(json.dumps(tool_input, ensure_ascii=False, default=str), TITLE_LIMIT)


def _tool_summary(part: dict) -> EventSummary:
    tool = part.get("tool")
    state = part.get("state")
    if not isinstance(state, dict):
        shown = "no state" if state is None else f"state {clip(repr(state), 40)}"
        return EventSummary(title=f"({shown})", status=UNFINISHED if state is None else None, is_error=True)
    raw_status = state.get("status")
    status = raw_status if raw_status in ("completed", "error") else UNFINISHED
    digest = input_digest(tool, state.get("input"))
    title = _string(state.get("title"))
    duration = None
    times = state.get("time")
    if isinstance(times, dict):
        start, end = _number(times.get("start")), _number(times.get("end"))
        if start is not None and end is not None and end >= start:
            duration = end - start
    if status == "error":
        error = _first_line(str(state.get("error") or "error"))
        return EventSummary(title=error, detail=digest, status=status, duration_ms=duration, is_error=True)
    if status == UNFINISHED and raw_status is not None:
        status_text = clip(str(raw_status), 20)
        headline = _first_line(title) if title else digest
        return EventSummary(title=headline, detail=f"status {status_text}", status=UNFINISHED, duration_ms=duration)
    headline = _first_line(title) if title else digest
    if status == "completed" and bash_timeout_ms(part) is not None:
        status = TIMED_OUT
    return EventSummary(
        title=headline,
        detail=digest if title and digest != headline else "",
        status=status,
        duration_ms=duration,
    )


def _tokens_line(part: dict) -> str:
    tokens = part.get("tokens")
    pieces = []
    if isinstance(tokens, dict):
        for key, label in (("input", "in"), ("output", "out"), ("reasoning", "think")):
            value = _number(tokens.get(key))
            if value:
                pieces.append(f"{label} {format_count(value)}")
        cache = tokens.get("cache")
        if isinstance(cache, dict) and _number(cache.get("read")):
            pieces.append(f"cache {format_count(cache['read'])}")
    cost = _number(part.get("cost"))
    if cost:
        pieces.append(f"${cost:.4f}")
    return " · ".join(pieces)


def error_text(error: object) -> str:
    """``Name: message`` of an ``error`` event's payload."""
    if not isinstance(error, dict):
        return str(error) if error is not None else "error"
    name = str(error.get("name") or "error")
    data = error.get("data")
    message = None
    if isinstance(data, dict):
        message = data.get("message")
    message = message or error.get("message")
    return f"{name}: {message}" if message else name


def summarize(value: object, kind: str, *, step_started_ms: float | None = None) -> EventSummary:
    """The row of one decoded event. ``kind`` is the engine's EventRecord.kind."""
    if not isinstance(value, dict):
        return EventSummary(title=clip(repr(value), TITLE_LIMIT), is_error=True)
    part = value.get("part")
    part = part if isinstance(part, dict) else {}
    if kind == "tool_use":
        if not part:
            return EventSummary(title="(tool_use without a part)", is_error=True)
        return _tool_summary(part)
    if kind in ("text", "reasoning"):
        text = part.get("text")
        duration = None
        times = part.get("time")
        if isinstance(times, dict):
            start, end = _number(times.get("start")), _number(times.get("end"))
            if start is not None and end is not None and end >= start:
                duration = end - start
        return EventSummary(title=_first_line(text) if isinstance(text, str) else "", duration_ms=duration)
    if kind == "step_start":
        return EventSummary(title="")
    if kind == "step_finish":
        reason = _string(part.get("reason")) or "?"
        timestamp = _number(value.get("timestamp"))
        duration = None
        if timestamp is not None and step_started_ms is not None and timestamp >= step_started_ms:
            duration = timestamp - step_started_ms
        return EventSummary(title=clip(reason, 40), detail=_tokens_line(part), duration_ms=duration)
    if kind == "error":
        return EventSummary(title=_first_line(error_text(value.get("error"))), is_error=True)
    keys = ", ".join(clip(str(key), 30) for key in list(value)[:6] if key not in ("type", "timestamp", "sessionID"))
    return EventSummary(title=f"{{{keys}}}" if keys else "")


def summarize_line(raw: bytes, kind: str, piece: int = 0, *, step_started_ms: float | None = None) -> EventSummary:
    """:func:`summarize` straight from the bytes of the event's physical line."""
    if kind == MALFORMED:
        text = raw.decode("utf-8", "replace")
        return EventSummary(title=_first_line(text) or "(blank)", is_error=True)
    return summarize_parsed(parse_line(raw, piece), kind, step_started_ms=step_started_ms)


def summarize_parsed(parsed: Parsed, kind: str, *, step_started_ms: float | None = None) -> EventSummary:
    """:func:`summarize` of a line already decoded with :func:`parse_line`."""
    if kind == MALFORMED or parsed.error is not None:
        return EventSummary(title=_first_line(parsed.text) or parsed.error or "(blank)", is_error=True)
    if kind == NOT_AN_OBJECT:
        return EventSummary(title=clip(json.dumps(parsed.value, default=str), TITLE_LIMIT), is_error=True)
    return summarize(parsed.value, kind, step_started_ms=step_started_ms)


# --- the detail pane -----------------------------------------------------------------------------
def pretty_json(value: object) -> str:
    """Indented JSON with non-ASCII kept (the caller neutralises control characters)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return repr(value)


def _tool_sections(part: dict) -> list[DetailSection]:
    sections = [DetailSection("Tool", f"{part.get('tool')}   callID {part.get('callID', '(absent)')}", "muted")]
    state = part.get("state")
    if not isinstance(state, dict):
        sections.append(DetailSection("State", pretty_json(state) if "state" in part else "(no state key)", "error"))
        return sections
    tool_input = state.get("input")
    if part.get("tool") == "bash" and isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        if _string(tool_input.get("description")):
            sections.append(DetailSection("Description", tool_input["description"], "muted"))
        sections.append(DetailSection("Command", tool_input["command"], "code"))
        rest = {key: val for key, val in tool_input.items() if key not in ("command", "description")}
        if rest:
            sections.append(DetailSection("Other input", pretty_json(rest), "json"))
    elif "input" in state:
        sections.append(DetailSection("Input", pretty_json(tool_input), "json"))
    if "error" in state:
        sections.append(DetailSection("Error", str(state.get("error")), "error"))
    if "output" in state:
        output = state.get("output")
        sections.append(DetailSection("Output", output if isinstance(output, str) else pretty_json(output), "output"))
    metadata = state.get("metadata")
    if isinstance(metadata, dict) and metadata:
        # metadata.output repeats the output (bash): show the short facts only.
        facts = {key: val for key, val in metadata.items() if key != "output"}
        if facts:
            sections.append(DetailSection("Metadata", pretty_json(facts), "json"))
        if "output" not in state and isinstance(metadata.get("output"), str):
            sections.append(DetailSection("Partial output (metadata)", metadata["output"], "output"))
    return sections


def _step_finish_sections(part: dict) -> list[DetailSection]:
    lines = [f"{'reason':<10}{part.get('reason')}"]
    tokens = part.get("tokens")
    if isinstance(tokens, dict):
        for key in ("total", "input", "output", "reasoning"):
            if key in tokens:
                lines.append(f"{key:<10}{_fmt_any(tokens.get(key))}")
        cache = tokens.get("cache")
        if isinstance(cache, dict):
            lines.append(f"{'cache':<10}read {_fmt_any(cache.get('read'))}  write {_fmt_any(cache.get('write'))}")
    if "cost" in part:
        cost = _number(part.get("cost"))
        lines.append(f"{'cost':<10}" + (f"${cost:.6f}" if cost is not None else repr(part.get("cost"))))
    return [DetailSection("Step finished", "\n".join(lines), "plain")]


def _fmt_any(value: object) -> str:
    number = _number(value)
    return format_count(number) if number is not None else repr(value)


def detail_sections(parsed: Parsed, kind: str) -> list[DetailSection]:
    """Everything worth reading about one event, untruncated."""
    if parsed.error is not None or kind == MALFORMED:
        return [
            DetailSection("Not JSON", parsed.error or "this line is not valid JSON", "error"),
            DetailSection("Line", parsed.text, "output"),
        ]
    value = parsed.value
    if not isinstance(value, dict):
        return [DetailSection("Not an event object", pretty_json(value), "error")]
    part = value.get("part")
    if kind == "tool_use" and isinstance(part, dict):
        return _tool_sections(part)
    if kind in ("text", "reasoning") and isinstance(part, dict) and isinstance(part.get("text"), str):
        return [DetailSection(kind.capitalize(), part["text"], "plain")]
    if kind == "step_finish" and isinstance(part, dict):
        return _step_finish_sections(part)
    if kind == "error":
        error = value.get("error")
        return [
            DetailSection("Error", error_text(error), "error"),
            DetailSection("Payload", pretty_json(error), "json"),
        ]
    return [DetailSection("Event", pretty_json(value), "json")]


# --- the episode as a whole ----------------------------------------------------------------------
def infer_status(findings: list[Finding], *, ended: bool) -> str:
    """running / finished / killed / error / empty, from the trace alone (no metadata file)."""
    if not ended:
        return "running"
    kinds = {finding.kind for finding in findings}
    if "empty_stream" in kinds:
        return "empty"
    if "error_event" in kinds:
        return "error"
    if "last_step_unfinished" in kinds or "no_step_finish" in kinds:
        return "killed"
    return "finished"


# --- findings ------------------------------------------------------------------------------------
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
