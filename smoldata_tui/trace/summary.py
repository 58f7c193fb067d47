"""One event → its timeline row: a one-line title, a dimmer detail, a status, a duration.

Pure functions over decoded JSON values (no I/O, no Textual). The timeline calls
:func:`summarize_line` for the rows on screen only; :func:`parse_line` decodes a line once for
both the row and the detail pane (:mod:`smoldata_tui.trace.event_detail`).

Titles are safe to show as they are (control characters neutralised, clipped to one line).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import orjson

from smoldata_tui.trace.analysis import MALFORMED, NOT_AN_OBJECT
from smoldata_tui.trace.call_checks import bash_timeout_ms
from smoldata_tui.trace.number_format import format_count
from smoldata_tui.trace.numbers import counted
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


# --- JSON values ---------------------------------------------------------------------------------
def json_number(value: object) -> float | None:
    """The value when it is a number the stats count (not ``true``/``false``, NaN, Infinity or
    beyond ±2**53: :mod:`smoldata_tui.trace.numbers`), else None."""
    return value if counted(value) else None


def nonempty_string(value: object) -> str | None:
    """The value when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


# --- one-line summaries --------------------------------------------------------------------------
def _first_line(text: str) -> str:
    stripped = text.strip()
    end = stripped.find("\n")
    first = stripped if end == -1 else stripped[:end] + " \u2026"
    return clip(first, TITLE_LIMIT)


_INPUT_KEYS = ("command", "filePath", "path", "pattern", "url", "query", "description", "prompt")


def input_digest(tool: object, tool_input: object) -> str:
    """The one argument that says what a call did (the command, the path, the pattern ...)."""
    if not isinstance(tool_input, dict):
        return clip(repr(tool_input), TITLE_LIMIT) if tool_input is not None else ""
    if tool == "bash" and nonempty_string(tool_input.get("command")):
        return "$ " + _first_line(tool_input["command"])
    if tool == "invalid":
        return _first_line(str(tool_input.get("tool") or tool_input.get("error") or ""))
    for key in _INPUT_KEYS:
        text = nonempty_string(tool_input.get(key))
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
    title = nonempty_string(state.get("title"))
    duration = None
    times = state.get("time")
    if isinstance(times, dict):
        start, end = json_number(times.get("start")), json_number(times.get("end"))
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
            value = json_number(tokens.get(key))
            if value:
                pieces.append(f"{label} {format_count(value)}")
        cache = tokens.get("cache")
        if isinstance(cache, dict) and json_number(cache.get("read")):
            pieces.append(f"cache {format_count(cache['read'])}")
    cost = json_number(part.get("cost"))
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
            start, end = json_number(times.get("start")), json_number(times.get("end"))
            if start is not None and end is not None and end >= start:
                duration = end - start
        return EventSummary(title=_first_line(text) if isinstance(text, str) else "", duration_ms=duration)
    if kind == "step_start":
        return EventSummary(title="")
    if kind == "step_finish":
        reason = nonempty_string(part.get("reason")) or "?"
        timestamp = json_number(value.get("timestamp"))
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
