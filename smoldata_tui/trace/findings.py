"""Findings of a stream, each pointing at a line: framing, envelope, steps, errors.

The checks are incremental (fed event by event, as a live log grows, by
:mod:`event_pass`) and cheap for the common case: a clean event costs a few dict
lookups. Per-call checks live in :mod:`call_checks`. A stream cut into parts analysed on their
own (in parallel) is put back together with :meth:`FindingsCollector.merge`.
"""

from __future__ import annotations

from smoldata_tui.trace.call_checks import CallChecks
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.steps import StepTracker
from smoldata_tui.trace.text import clip

KNOWN_TYPES = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish", "error"})
# step_finish reasons with a finding of their own (the AI SDK's names)
_CUT_OFF = "length"
_NO_FINISH_REASON = "unknown"  # the provider's stream closed without a finish reason
# Kinds one bad line makes (a log of a million junk lines would make a million): each is listed one
# by one up to LISTED_PER_KIND times, the rest of it become one finding. No merge drops these kinds,
# so a stream analysed in parts lists the same ones.
LISTED_PER_KIND = 1000
PER_LINE_KINDS = frozenset({"malformed_line", "truncated_line", "wrapper_crash", "not_an_object", "undecodable",
                            "wrapper_split"})  # fmt: skip

__all__ = ["KNOWN_TYPES", "Finding", "FindingsCollector", "Severity"]


class FindingsCollector:
    """Collects findings from the events of one stream, in order."""

    def __init__(self, steps: StepTracker) -> None:
        self.findings: list[Finding] = []
        self.calls = CallChecks(self.add)
        self.steps = steps
        self._sessions: dict[str, tuple[int, int]] = {}  # sessionID -> (first line, event)
        self.session: object = None  # the sessionID of the previous event that had one
        self._unknown: dict[str, list[int]] = {}  # type -> [first line, first event, count]
        self._first_ts: tuple | None = None  # (timestamp, line, event) of the first timestamp
        self._last_ts: float = float("-inf")
        self._last_ts_line = 0
        self.events_seen = 0
        self._step_finishes = 0
        self.said: set[object] = set()  # messageIDs of open steps that produced text, reasoning or a call
        # messageID -> the empty_response finding of its first step_finish (None: not empty); only
        # that one can be claimed by text an earlier part of the stream saw (see merge)
        self._first_finish: dict[object, Finding | None] = {}
        self._dropped: list | None = None  # [first line, first event, count] of step_finish reason "unknown"
        self._listed: dict[str, int] = {}  # a per-line kind -> findings of it listed
        self._omitted: dict[str, list] = {}  # a per-line kind -> [severity, first line, first event, last line, count]

    def add(
        self,
        kind: str,
        severity: Severity,
        line: int | None,
        event: int | None,
        message: str,
        related_line: int | None = None,
    ) -> Finding:
        finding = Finding(kind, severity, line, event, message, related_line)
        if kind in PER_LINE_KINDS:
            listed = self._listed.get(kind, 0)
            if listed >= LISTED_PER_KIND:
                self._omit(finding)
                return finding
            self._listed[kind] = listed + 1
        self.findings.append(finding)
        return finding

    def _omit(self, finding: Finding, count: int = 1, last_line: int | None = None) -> None:
        omitted = self._omitted.get(finding.kind)
        last_line = finding.line if last_line is None else last_line
        if omitted is None:
            self._omitted[finding.kind] = [finding.severity, finding.line, finding.event, last_line, count]
            return
        if (finding.line or 0) < (omitted[1] or 0):
            omitted[1], omitted[2] = finding.line, finding.event
        omitted[3] = max(omitted[3] or 0, last_line or 0)
        omitted[4] += count

    # --- stream framing -------------------------------------------------------------------
    def undecodable(self, line: int, event: int | None, exc: UnicodeDecodeError) -> None:
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
        self.events_seen += 1
        kind = "wrapper_crash" if not isinstance(exc, ValueError) else "truncated_line" if truncated else "malformed_line"
        if self._listed.get(kind, 0) >= LISTED_PER_KIND:  # not listed: its sentence is not needed
            self._omit(Finding(kind, Severity.ERROR, line, event, ""))
            return
        reason = clip(str(exc), 160)
        if kind == "wrapper_crash":
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

    def non_object(self, line: int, event: int, value: object) -> None:
        self.add(
            "not_an_object",
            Severity.ERROR,
            line,
            event,
            f"valid JSON but a {type(value).__name__}, not an event object; the training wrapper "
            "calls .get() on it and crashes (AttributeError)",
        )
        self.events_seen += 1

    # --- events (fed by event_pass.EventPass) ---------------------------------------------------
    def timestamp(self, line: int, index: int, timestamp: float) -> None:
        """A counted timestamp: does it go back?"""
        if timestamp < self._last_ts:
            self._went_back(line, index, timestamp, self._last_ts, self._last_ts_line)
        elif self._first_ts is None:
            self._first_ts = (timestamp, line, index)
        self._last_ts = timestamp
        self._last_ts_line = line

    def _went_back(self, line: int, index: int, timestamp: float, previous: float, previous_line: int) -> None:
        self.add(
            "time_backwards",
            Severity.WARNING,
            line,
            index,
            f"timestamp goes back {(previous - timestamp) / 1000:.3f} s from line {previous_line}",
            previous_line,
        )

    def new_session(self, line: int, index: int, session: str) -> None:
        self.session = session
        if session in self._sessions:
            return
        self._sessions[session] = (line, index)
        if len(self._sessions) > 1:
            self._second_session(session, line, index)

    def _second_session(self, session: str, line: int, index: int) -> None:
        first, (first_line, _) = next(iter(self._sessions.items()))
        self.add(
            "multiple_sessions",
            Severity.WARNING,
            line,
            index,
            f"sessionID {clip(session, 60)} differs from {clip(first, 60)} of line {first_line}",
            first_line,
        )

    def step_finish(self, line: int, index: int, part: dict | None, message_id: object, timestamp: float | None) -> None:
        """``part``: the event's part when it is an object; ``message_id``: its messageID, hashable."""
        self._step_finishes += 1
        reason = part.get("reason") if part is not None else None
        if reason == _NO_FINISH_REASON:
            if self._dropped is None:
                self._dropped = [line, index, 1]
            else:
                self._dropped[2] += 1
        elif reason == _CUT_OFF:
            self.add(
                "finish_length",
                Severity.WARNING,
                line,
                index,
                "the model's answer was cut off by the length limit (step_finish reason `length`): "
                "it hit its output-token cap mid-answer",
            )
        empty = None
        if message_id in self.said:
            self.said.discard(message_id)
        elif reason != _NO_FINISH_REASON:
            empty = self._empty_response(line, index)
        self._first_finish.setdefault(message_id, empty)
        orphan = self.steps.finish(message_id, line, index, timestamp)
        if orphan is not None:
            orphan.finding = self.add(
                "unmatched_step",
                Severity.WARNING,
                line,
                index,
                f"step_finish for message {clip(str(message_id), 40)} has no step_start",
            )

    def _empty_response(self, line: int, index: int) -> Finding:
        return self.add(
            "empty_response",
            Severity.WARNING,
            line,
            index,
            "the model's answer was empty: this step has no text, no reasoning and no tool call",
        )

    def error(self, line: int, index: int, event: dict) -> None:
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

    def unknown_type(self, line: int, index: int, kind: object) -> None:
        name = clip(str(kind), 40) if kind is not None else "(none)"
        seen = self._unknown.get(name)
        if seen is None:
            self._unknown[name] = [line, index, 1]
        else:
            seen[2] += 1

    # --- parts of one stream ------------------------------------------------------------------
    def shift_events(self, base: int) -> None:
        """Renumber event indices by ``base`` (this part started after ``base`` events)."""
        for finding in self.findings:
            if finding.event is not None:
                finding.event += base
        self.calls.shift_events(base)
        self.steps.shift_events(base)
        self._sessions = {key: (line, index + base) for key, (line, index) in self._sessions.items()}
        for seen in self._unknown.values():
            seen[1] += base
        if self._first_ts is not None:
            timestamp, line, index = self._first_ts
            self._first_ts = (timestamp, line, index + base)
        if self._dropped is not None:
            self._dropped[1] += base
        for omitted in self._omitted.values():
            if omitted[2] is not None:
                omitted[2] += base

    def merge(self, later: FindingsCollector) -> None:
        """Continue with the next part of the stream, analysed on its own (events already shifted).

        What ``later`` could not know (ids, steps, sessions and timestamps of the
        parts before it) is settled here; the findings end up as a sequential
        pass would have made them, ordered by line.
        """
        dropped: set[int] = set()
        start = len(self.findings)  # what is appended from here on, the merge made
        self.calls.merge(later.calls, dropped)
        # step_finish lines whose step_start is in an earlier part
        for orphan in self.steps.merge(later.steps):
            dropped.add(id(orphan.finding))
        # sessions are judged against the first of the whole stream
        dropped.update(id(f) for f in later.findings if f.kind == "multiple_sessions")
        # a step whose text or call is in this part and whose step_finish is in the later one
        for message_id, finding in later._first_finish.items():
            if message_id in self.said:  # this part's text answers that step_finish
                self.said.discard(message_id)
                if finding is not None:
                    dropped.add(id(finding))
                    finding = None
            self._first_finish.setdefault(message_id, finding)
        self.said |= later.said
        if later._dropped is not None:
            if self._dropped is None:
                self._dropped = list(later._dropped)
            else:
                self._dropped[2] += later._dropped[2]
        for session, (line, index) in later._sessions.items():
            if session not in self._sessions:
                self._sessions[session] = (line, index)
                if len(self._sessions) > 1:
                    self._second_session(session, line, index)
        if later._first_ts is not None and later._first_ts[0] < self._last_ts:
            timestamp, line, index = later._first_ts
            self._went_back(line, index, timestamp, self._last_ts, self._last_ts_line)
        if later._last_ts_line:
            self._last_ts, self._last_ts_line = later._last_ts, later._last_ts_line
        if self._first_ts is None:
            self._first_ts = later._first_ts
        if later.session is not None:
            self.session = later.session
        for name, (line, index, count) in later._unknown.items():
            seen = self._unknown.get(name)
            if seen is None:
                self._unknown[name] = [line, index, count]
            else:
                seen[2] += count
        self.events_seen += later.events_seen
        self._step_finishes += later._step_finishes
        made_here = self.findings[start:]
        del self.findings[start:]
        kept = [finding for finding in later.findings if id(finding) not in dropped]
        self.findings.extend(kept + made_here)
        self.findings.sort(key=lambda finding: finding.line or 0)
        for kind, (severity, line, index, last_line, count) in later._omitted.items():
            self._omit(Finding(kind, severity, line, index, ""), count, last_line)
        for kind, listed in later._listed.items():
            self._listed[kind] = self._listed.get(kind, 0) + listed
        if any(self._listed.get(kind, 0) > LISTED_PER_KIND for kind in later._listed):
            self._list_the_first_of_each_kind()

    def _list_the_first_of_each_kind(self) -> None:
        """After a merge: LISTED_PER_KIND of each per-line kind, the first in the stream."""
        seen: dict[str, int] = {}
        listed = []
        for finding in self.findings:
            if finding.kind in PER_LINE_KINDS:
                seen[finding.kind] = seen.get(finding.kind, 0) + 1
                if seen[finding.kind] > LISTED_PER_KIND:
                    self._omit(finding)
                    continue
            listed.append(finding)
        self.findings[:] = listed
        self._listed = {kind: min(count, LISTED_PER_KIND) for kind, count in seen.items()}

    # --- end of stream ------------------------------------------------------------------------
    def finish(self) -> None:
        """Add the findings that only the end of the stream can tell."""
        if self.events_seen == 0:
            self.add("empty_stream", Severity.ERROR, None, None, "the trace holds no events")
            return
        if self._dropped is not None:
            line, index, count = self._dropped
            steps = f"{count} steps ended" if count > 1 else "a step ended"
            self.add(
                "stream_dropped",
                Severity.ERROR,
                line,
                index,
                f"{steps} with finish reason `unknown` (first here): the provider's stream closed without a "
                "finish reason, and OpenCode 1.18.31 then repeats the step until it is killed",
            )
        for name, (line, index, count) in self._unknown.items():
            times = f" ({count} lines, first here)" if count > 1 else ""
            self.add(
                "unknown_event_type",
                Severity.INFO,
                line,
                index,
                f"event type {name!r} is not one of OpenCode 1.18.31's six{times}",
            )
        for kind, (severity, line, index, last_line, count) in self._omitted.items():
            lines = f"{count:,} more lines" if count > 1 else "one more line"
            self.findings.append(Finding(kind, severity, line, index, f"{lines} like the {LISTED_PER_KIND:,} above, from "
                                         f"here to line {last_line:,}, not listed one by one"))  # fmt: skip
        if self._step_finishes == 0:
            self.add(
                "no_step_finish",
                Severity.ERROR,
                None,
                None,
                "no step_finish anywhere: the agent never completed a step, so the training wrapper "
                "gives None (Incomplete OpenCode event stream)",
            )
        for step, line in self.steps.replaced:
            self.add(
                "unmatched_step",
                Severity.WARNING,
                step.line,
                step.event,
                f"step started here has no step_finish: the step_start on line {line} reuses its messageID",
                line,
            )
        for step in sorted(self.steps.open.values(), key=lambda step: step.line):
            if step.line == self.steps.last_start:
                if self._step_finishes:
                    self.add(
                        "last_step_unfinished",
                        Severity.WARNING,
                        step.line,
                        step.event,
                        "the last step never finished (the agent was killed or timed out); the "
                        "training wrapper still accepts this trace",
                    )
            else:
                self.add("unmatched_step", Severity.WARNING, step.line, step.event, "step started here has no step_finish")
