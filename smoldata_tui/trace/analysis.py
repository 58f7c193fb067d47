"""bytes → lines → events → findings, stats and verdict, in one streaming pass.

Live and replay are the same path: a live run feeds bytes as they arrive, a
replay feeds the file in chunks. Memory stays bounded by the size of the
largest line plus per-call bookkeeping; events are not kept unless asked for
(the viewer keeps a compact :class:`EventRecord` per event).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import orjson

from smoldata_tui.trace.findings import Finding, FindingsCollector, Severity
from smoldata_tui.trace.parse import (
    DEEP_NESTING,
    block_may_split,
    may_nest_deeply,
    parse_exactly,
    wrapper_may_split,
)
from smoldata_tui.trace.reader import LineBlock, LineFramer
from smoldata_tui.trace.stats import Stats, StatsCollector
from smoldata_tui.trace.verdict import Verdict, VerdictMachine

CHUNK_SIZE = 1 << 20

MALFORMED = "(malformed)"  # EventRecord.kind of a line that is not JSON
NOT_AN_OBJECT = "(not an object)"  # EventRecord.kind of JSON that is not an event object


@dataclass(slots=True)
class EventRecord:
    """What the timeline needs to list and filter an event without re-reading it."""

    index: int  # 0-based event (row) number
    line: int  # 1-based physical line
    offset: int  # byte offset of the physical line
    length: int  # bytes of the physical line, without its newline
    kind: str  # event type, or MALFORMED / NOT_AN_OBJECT
    timestamp: float | None
    step: int  # 1-based step the event belongs to, 0 before the first step_start
    tool: str | None = None
    status: str | None = None
    piece: int = 0  # >0 when the wrapper's line breaks cut the physical line into events


@dataclass
class TraceReport:
    verdict: Verdict
    findings: list[Finding]
    stats: Stats
    events: int
    lines: int
    bytes: int

    def severity_counts(self) -> dict[str, int]:
        counts = Counter(finding.severity.value for finding in self.findings)
        return {severity.value: counts.get(severity.value, 0) for severity in Severity}

    def to_json(self) -> dict:
        failure = self.verdict.failure
        return {
            "native_tool_calls": self.verdict.native_tool_calls,
            "wrapper_crash": self.verdict.wrapper_crash,
            "verdict_reason": self.verdict.reason,
            "verdict_line": failure.line if failure else None,
            "verdict_explanation": failure.explanation if failure else None,
            "findings": [finding.to_json() for finding in self.findings],
            "finding_counts": self.severity_counts(),
            "stats": self.stats.to_json(),
            "events": self.events,
            "lines": self.lines,
            "bytes": self.bytes,
        }


def _known_string_chars(event: object) -> int:
    """Characters in the big strings of a typical event: outputs, texts, file contents."""
    if type(event) is not dict:
        return 0
    part = event.get("part")
    if type(part) is not dict:
        return 0
    total = 0
    text = part.get("text")
    if type(text) is str:
        total += len(text)
    state = part.get("state")
    if type(state) is dict:
        for value in (state.get("output"), state.get("error")):
            if type(value) is str:
                total += len(value)
        for inner in (state.get("input"), state.get("metadata")):
            if type(inner) is dict:
                for value in inner.values():
                    if type(value) is str:
                        total += len(value)
    return total


def _looks_truncated(exc: BaseException) -> bool:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(exc.doc.rstrip())
    return False


class TraceAnalysis:
    """Incremental analysis of one OpenCode ``run --format json`` stream."""

    def __init__(self, *, keep_events: bool = False) -> None:
        self._framer = LineFramer()
        self._verdict = VerdictMachine()
        self._findings = FindingsCollector()
        self._stats = StatsCollector()
        self.events: list[EventRecord] | None = [] if keep_events else None
        self.event_count = 0
        self.line_count = 0
        self._step = 0
        self._finished = False

    # --- feeding ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> int:
        """Add bytes; returns how many new events they completed."""
        before = self.event_count
        block = self._framer.feed(data)
        if block is not None:
            self._take_block(block)
        return self.event_count - before

    def finish(self) -> TraceReport:
        """End of stream: the unterminated last line counts, end-of-stream findings are added."""
        if not self._finished:
            block = self._framer.close()
            if block is not None:
                self._take_block(block)
            self._findings.finish()
            self._finished = True
        return self.report()

    # --- results ------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        return self._findings.findings

    @property
    def stats(self) -> Stats:
        return self._stats.stats

    @property
    def bytes_seen(self) -> int:
        return self._framer.bytes_framed

    def verdict(self) -> Verdict:
        """The verdict if the stream ended now (final once :meth:`finish` was called)."""
        return self._verdict.verdict()

    def report(self) -> TraceReport:
        return TraceReport(
            self.verdict(), list(self.findings), self.stats, self.event_count, self.line_count, self.bytes_seen
        )

    # --- the hot loop -------------------------------------------------------------------------
    def _take_block(self, block: LineBlock) -> None:
        maybe_split = block_may_split(block.data)
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        verdict_event = self._verdict.event
        take_value = self._take_value
        take_exactly = self._take_exactly
        deep_bytes = 2 * DEEP_NESTING
        line = block.first_line
        offset = block.offset
        lines = block.lines()
        last = len(lines) - 1
        for position, raw in enumerate(lines):
            size = len(raw)
            if size and not raw.isspace():
                try:
                    value = loads(raw)
                except decode_error:
                    take_exactly(raw, line, offset, not block.terminated and position == last)
                else:
                    if (
                        (maybe_split and wrapper_may_split(raw))
                        or (size > deep_bytes and may_nest_deeply(raw, _known_string_chars(value)))
                        or not verdict_event(line, value, exact=False)
                    ):
                        take_exactly(raw, line, offset, False)
                    else:
                        take_value(value, line, offset, size, 0)
            line += 1
            offset += size + 1
        self.line_count = line - 1

    def _take_value(self, value: object, line: int, offset: int, size: int, piece: int) -> None:
        """An event the verdict machine has already seen: findings, stats, record."""
        index = self.event_count
        self.event_count = index + 1
        if type(value) is dict:
            kind = value.get("type")
            if kind == "step_start":
                self._step += 1
            self._findings.event(line, index, value, kind)
            self._stats.event(value, kind)
            if self.events is not None:
                self.events.append(self._record(index, line, offset, size, value, kind, piece))
        else:
            self._findings.non_object(line, index, value)
            if self.events is not None:
                self.events.append(EventRecord(index, line, offset, size, NOT_AN_OBJECT, None, self._step, piece=piece))

    def _record(
        self, index: int, line: int, offset: int, size: int, value: dict, kind: object, piece: int
    ) -> EventRecord:
        timestamp = value.get("timestamp")
        if not isinstance(timestamp, (int, float)) or isinstance(timestamp, bool):
            timestamp = None
        record = EventRecord(index, line, offset, size, kind if isinstance(kind, str) else repr(kind), timestamp, self._step, piece=piece)
        if kind == "tool_use":
            part = value.get("part")
            if isinstance(part, dict):
                tool = part.get("tool")
                record.tool = tool if isinstance(tool, str) else None
                state = part.get("state")
                status = state.get("status") if isinstance(state, dict) else None
                record.status = status if isinstance(status, str) else "(none)"
        return record

    def _take_exactly(self, raw: bytes, line: int, offset: int, unterminated: bool) -> None:
        """The slow path: the wrapper's own decode/splitlines/json.loads for this line."""
        exact = parse_exactly(raw)
        first_index = self.event_count
        if exact.decode_error is not None:
            error = exact.decode_error
            self._verdict.undecodable(line, error, offset + error.start)
            self._findings.undecodable(line, first_index if exact.events else None, error, offset)
        else:
            for piece in exact.pieces:
                if piece.error is not None:
                    self._verdict.unparsable(line, piece.error)
                else:
                    self._verdict.event(line, piece.value)
        if exact.split_differently:
            self._findings.wrapper_split(line, first_index if exact.events else None, exact.breaks, len(exact.pieces))
        numbered = len(exact.events) > 1
        for number, event in enumerate(exact.events, start=1):
            piece = number if numbered else 0
            if event.error is None:
                self._take_value(event.value, line, offset, len(raw), piece)
                continue
            index = self.event_count
            self.event_count += 1
            truncated = unterminated or _looks_truncated(event.error)
            self._findings.malformed(line, index, event.error, truncated=truncated)
            if self.events is not None:
                self.events.append(EventRecord(index, line, offset, len(raw), MALFORMED, None, self._step, piece=piece))


def analyze_bytes(data: bytes, *, keep_events: bool = False) -> tuple[TraceReport, TraceAnalysis]:
    analysis = TraceAnalysis(keep_events=keep_events)
    analysis.feed(data)
    return analysis.finish(), analysis


def analyze_path(path: str | os.PathLike[str], *, keep_events: bool = False) -> tuple[TraceReport, TraceAnalysis]:
    """Stream a trace file through the analysis (OSError propagates to the caller)."""
    analysis = TraceAnalysis(keep_events=keep_events)
    with open(Path(path), "rb", buffering=0) as handle:
        while chunk := handle.read(CHUNK_SIZE):
            analysis.feed(chunk)
    return analysis.finish(), analysis
