"""Findings: what is wrong or notable in a trace, each pointing at a line.

The checks are incremental (fed event by event, as a live log grows) and
cheap for the common case: a clean event costs a few dict lookups.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from smoldata_tui.trace.text import clip

KNOWN_TYPES = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish", "error"})
SETTLED = frozenset({"completed", "error"})


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    severity: Severity
    line: int | None  # 1-based physical line, None for the stream as a whole
    event: int | None  # 0-based index of the event (timeline row)
    message: str
    related_line: int | None = None  # e.g. the first occurrence of a duplicate

    def to_json(self) -> dict:
        return {
            "line": self.line,
            "event": self.event,
            "kind": self.kind,
            "severity": self.severity.value,
            "message": self.message,
            "related_line": self.related_line,
        }


@dataclass(slots=True)
class _Call:
    line: int
    part_id: object
    tool: object
    fingerprint: tuple


@dataclass(slots=True)
class _Step:
    line: int
    event: int
    finished: bool = False


def _falsy_name(value: object) -> str:
    if value is None:
        return "null"
    if value == "":
        return '""'
    return f"{clip(repr(value), 20)}, which is falsy"


def _call_fingerprint(state: object) -> tuple:
    """Enough of a call's state to tell an identical re-emission from a changed one, cheaply."""
    if type(state) is not dict:
        return (repr(state)[:100],)
    output = state.get("output")
    return (
        state.get("status"),
        state.get("title"),
        len(output) if type(output) is str else None,
        state.get("time"),
        state.get("error"),
    )


def _tool_name(part: dict) -> str:
    return clip(str(part.get("tool")), 40)


class FindingsCollector:
    """Collects findings from the events of one stream, in order."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._calls: dict[object, _Call] = {}
        self._steps: dict[object, _Step] = {}
        self._step_order: list[object] = []
        self._sessions: dict[str, int] = {}  # sessionID -> first line
        self._session: object = None  # the sessionID of the previous event that had one
        self._unknown: dict[str, list[int]] = {}  # type -> [first line, first event, count]
        self._last_ts: float = float("-inf")
        self._last_ts_line = 0
        self._events = 0
        self._step_finishes = 0

    def add(
        self,
        kind: str,
        severity: Severity,
        line: int | None,
        event: int | None,
        message: str,
        related_line: int | None = None,
    ) -> None:
        self.findings.append(Finding(kind, severity, line, event, message, related_line))

    # --- stream framing -------------------------------------------------------------------
    def undecodable(self, line: int, event: int | None, exc: UnicodeDecodeError, line_offset: int) -> None:
        bad = exc.object[exc.start : exc.end].hex(" ")
        self.add(
            "undecodable",
            Severity.ERROR,
            line,
            event,
            f"bytes {bad} at column {exc.start + 1} are not UTF-8; decoding the log fails, "
            "so the training wrapper gives None",
        )

    def wrapper_split(self, line: int, event: int | None, breaks: list[str], pieces: int) -> None:
        self.add(
            "wrapper_split",
            Severity.ERROR,
            line,
            event,
            f"contains {', '.join(breaks)}; the training wrapper's str.splitlines() cuts this line "
            f"into {pieces} piece{'s' if pieces != 1 else ''} where a newline-framed reader sees one",
        )

    def malformed(self, line: int, event: int, exc: BaseException, *, truncated: bool) -> None:
        reason = clip(str(exc), 160)
        if not isinstance(exc, ValueError):
            self.add(
                "wrapper_crash",
                Severity.ERROR,
                line,
                event,
                f"json.loads raises {type(exc).__name__} ({reason}); the training wrapper does not "
                "catch it and crashes",
            )
        elif truncated:
            self.add("truncated_line", Severity.ERROR, line, event, f"line is cut short: {reason}")
        else:
            self.add("malformed_line", Severity.ERROR, line, event, f"not JSON: {reason}")
        self._events += 1

    def non_object(self, line: int, event: int, value: object) -> None:
        self.add(
            "not_an_object",
            Severity.ERROR,
            line,
            event,
            f"valid JSON but a {type(value).__name__}, not an event object; the training wrapper "
            "calls .get() on it and crashes (AttributeError)",
        )
        self._events += 1

    # --- events -------------------------------------------------------------------------------
    def event(self, line: int, index: int, event: dict, kind: object) -> None:
        # The hot path: a healthy event costs two lookups and two comparisons here.
        self._events += 1
        timestamp = event.get("timestamp")
        if type(timestamp) is int or type(timestamp) is float:
            if timestamp < self._last_ts:
                self._went_back(line, index, timestamp)
            self._last_ts = timestamp
            self._last_ts_line = line
        session = event.get("sessionID")
        if session != self._session and type(session) is str:
            self._new_session(line, index, session)
        if kind == "tool_use":
            self._tool_use(line, index, event)
        elif kind == "step_start":
            self._step_start(line, index, event)
        elif kind == "step_finish":
            self._step_finish(line, index, event)
        elif kind == "error":
            self._error(line, index, event)
        elif type(kind) is not str or kind not in KNOWN_TYPES:
            name = clip(str(kind), 40) if kind is not None else "(none)"
            seen = self._unknown.get(name)
            if seen is None:
                self._unknown[name] = [line, index, 1]
            else:
                seen[2] += 1

    def _went_back(self, line: int, index: int, timestamp: float) -> None:
        self.add(
            "time_backwards",
            Severity.WARNING,
            line,
            index,
            f"timestamp goes back {(self._last_ts - timestamp) / 1000:.3f} s from line {self._last_ts_line}",
            self._last_ts_line,
        )

    def _new_session(self, line: int, index: int, session: str) -> None:
        self._session = session
        if session in self._sessions:
            return
        self._sessions[session] = line
        if len(self._sessions) > 1:
            first, first_line = next(iter(self._sessions.items()))
            self.add(
                "multiple_sessions",
                Severity.WARNING,
                line,
                index,
                f"sessionID {clip(session, 60)} differs from {clip(first, 60)} of line {first_line}",
                first_line,
            )

    def _tool_use(self, line: int, index: int, event: dict) -> None:
        part = event.get("part")
        if type(part) is not dict:
            what = "no part" if "part" not in event else f"a {type(part).__name__} part"
            self.add("bad_part", Severity.ERROR, line, index, f"tool_use with {what}; the training wrapper gives None")
            return
        state = part.get("state")
        call_id = part.get("callID")
        if not call_id:
            how = "has no callID" if "callID" not in part else f"has callID {_falsy_name(call_id)}"
            self.add(
                "missing_call_id",
                Severity.ERROR,
                line,
                index,
                f"{_tool_name(part)} call {how}; the training wrapper gives None",
            )
        else:
            self._check_duplicate(line, index, part, call_id, state)
        if type(state) is not dict:
            self._bad_state(line, index, part, state)
            return
        status = state.get("status")
        if status == "completed":
            if part.get("tool") == "invalid":
                self._invalid_tool(line, index, state)
                return
            metadata = state.get("metadata")
            if type(metadata) is dict:
                code = metadata.get("exit")
                if code and type(code) is int:
                    self.add("nonzero_exit", Severity.INFO, line, index, f"{_tool_name(part)} exited with {code}")
        elif status == "error":
            self.add(
                "tool_error",
                Severity.WARNING,
                line,
                index,
                f"{_tool_name(part)} failed: {clip(str(state.get('error', '')), 200)}",
            )
            if part.get("tool") == "invalid":
                self._invalid_tool(line, index, state)
        else:
            self.add(
                "unfinished_call",
                Severity.ERROR,
                line,
                index,
                f"{_tool_name(part)} call never finished: status {clip(repr(status), 30)}",
            )

    def _bad_state(self, line: int, index: int, part: dict, state: object) -> None:
        if "state" not in part:
            self.add("unfinished_call", Severity.ERROR, line, index, f"{_tool_name(part)} call has no state")
            return
        self.add(
            "wrapper_crash",
            Severity.ERROR,
            line,
            index,
            f"{_tool_name(part)} call's state is {clip(repr(state), 30)}, not an object; the training "
            "wrapper calls .get() on it and crashes (AttributeError)",
        )

    def _invalid_tool(self, line: int, index: int, state: dict) -> None:
        detail = state.get("output") or state.get("error") or ""
        self.add(
            "invalid_tool",
            Severity.WARNING,
            line,
            index,
            "the model called an unknown tool or sent arguments that are not JSON"
            + (f": {clip(str(detail), 160)}" if detail else ""),
        )

    def _check_duplicate(self, line: int, index: int, part: dict, call_id: object, state: object) -> None:
        try:
            first = self._calls.get(call_id)
        except TypeError:
            return  # an unhashable id: the verdict explains it
        tool = part.get("tool")
        if first is None:
            self._calls[call_id] = _Call(line, part.get("id"), tool, _call_fingerprint(state))
            return
        if first.part_id == part.get("id"):
            how = (
                "an identical re-emission of the same part"
                if first.fingerprint == _call_fingerprint(state)
                else "the same part re-emitted with different content"
            )
        else:
            how = f"a different call ({clip(str(tool), 30)}) reusing the id of a {clip(str(first.tool), 30)} call"
        self.add(
            "duplicate_call_id",
            Severity.ERROR,
            line,
            index,
            f"callID {clip(str(call_id), 60)} repeats the one on line {first.line}: {how}",
            first.line,
        )

    def _step_start(self, line: int, index: int, event: dict) -> None:
        part = event.get("part")
        message_id = part.get("messageID") if isinstance(part, dict) else None
        try:
            if message_id in self._steps:
                return
            self._steps[message_id] = _Step(line, index)
        except TypeError:
            return
        self._step_order.append(message_id)

    def _step_finish(self, line: int, index: int, event: dict) -> None:
        self._step_finishes += 1
        part = event.get("part")
        message_id = part.get("messageID") if isinstance(part, dict) else None
        try:
            step = self._steps.get(message_id)
        except TypeError:
            step = None
        if step is None:
            self.add(
                "unmatched_step",
                Severity.WARNING,
                line,
                index,
                f"step_finish for message {clip(str(message_id), 40)} has no step_start",
            )
        else:
            step.finished = True

    def _error(self, line: int, index: int, event: dict) -> None:
        error = event.get("error")
        name, message = "error", ""
        if isinstance(error, dict):
            name = str(error.get("name") or name)
            data = error.get("data")
            if isinstance(data, dict) and data.get("message"):
                message = str(data["message"])
            elif error.get("message"):
                message = str(error["message"])
        self.add(
            "error_event",
            Severity.ERROR,
            line,
            index,
            f"{clip(name, 60)}: {clip(message, 300)}" if message else clip(name, 60),
        )

    # --- end of stream ------------------------------------------------------------------------
    def finish(self) -> None:
        """Add the findings that only the end of the stream can tell."""
        if self._events == 0:
            self.add("empty_stream", Severity.ERROR, None, None, "the trace holds no events")
            return
        for name, (line, index, count) in self._unknown.items():
            times = f" ({count} lines, first here)" if count > 1 else ""
            self.add(
                "unknown_event_type",
                Severity.INFO,
                line,
                index,
                f"event type {name!r} is not one of OpenCode 1.18.31's six{times}",
            )
        if self._step_finishes == 0:
            self.add(
                "no_step_finish",
                Severity.ERROR,
                None,
                None,
                "no step_finish anywhere: the agent never completed a step, so the training wrapper "
                "gives None (Incomplete OpenCode event stream)",
            )
        last = self._step_order[-1] if self._step_order else None
        for message_id in self._step_order:
            step = self._steps[message_id]
            if step.finished:
                continue
            if message_id is last and self._step_finishes:
                self.add(
                    "last_step_unfinished",
                    Severity.WARNING,
                    step.line,
                    step.event,
                    "the last step never finished (the agent was killed or timed out); the training "
                    "wrapper still accepts this trace",
                )
            elif message_id is not last:
                self.add(
                    "unmatched_step",
                    Severity.WARNING,
                    step.line,
                    step.event,
                    "step started here has no step_finish",
                )
