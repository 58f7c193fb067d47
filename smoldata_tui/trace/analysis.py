"""bytes → lines → events → findings, stats and verdict, in one streaming pass.

Live and replay are the same path: a live run feeds bytes as they arrive, a
replay feeds the file in chunks. Memory stays bounded by the size of the
largest line plus per-call bookkeeping; events are not kept unless asked for
(the viewer keeps a compact :class:`EventRecord` per event).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import orjson

from smoldata_tui.trace.event_pass import EventPass
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.findings import FindingsCollector
from smoldata_tui.trace.numbers import counted
from smoldata_tui.trace.parse import (
    DEEP_NESTING,
    may_nest_deeply,
    huge_line_error,
    parse_exactly,
    wrapper_may_split,
)
from smoldata_tui.trace.reader import HugeLine, LineBatch, LineFramer
from smoldata_tui.trace.stats import Stats, StatsCollector
from smoldata_tui.trace.steps import StepTracker
from smoldata_tui.trace.verdict import Verdict, VerdictMachine

CHUNK_SIZE = 1 << 20

_SEVERITIES = [severity.value for severity in Severity]
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
        counts = dict.fromkeys(_SEVERITIES, 0)  # in Severity's order
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

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


def _bytes_outside_known_strings(event: object, size: int) -> int:
    """An upper bound on the line's bytes outside its big strings (outputs, texts, contents).

    A string of n characters takes at least n bytes in the line, so subtracting
    lengths never undercounts. Stops as soon as the bound is small enough.
    """
    if type(event) is not dict:
        return size
    part = event.get("part")
    if type(part) is not dict:
        return size
    text = part.get("text")
    if type(text) is str:
        return size - len(text)
    state = part.get("state")
    if type(state) is not dict:
        return size
    output = state.get("output")
    if type(output) is str:
        size -= len(output)
    metadata = state.get("metadata")
    if type(metadata) is dict:
        output = metadata.get("output")
        if type(output) is str:
            size -= len(output)
    if size <= 2 * DEEP_NESTING:
        return size
    for inner in (state.get("input"), metadata):
        if type(inner) is dict:
            for value in inner.values():
                if type(value) is str:
                    size -= len(value)
    error = state.get("error")
    return size - len(error) if type(error) is str else size


def _looks_truncated(exc: BaseException) -> bool:
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(exc.doc.rstrip())
    return False


# on_event(value, line, offset, size, piece): every parsed event, in stream order.
EventHook = Callable[[object, int, int, int, int], None]


class TraceAnalysis:
    """Incremental analysis of one OpenCode ``run --format json`` stream.

    ``on_event`` is called with every event that parses, after the verdict machine has seen it:
    a reader that wants more from each event than the report (the diff's calls) takes it there
    instead of parsing the trace again. ``verdict_only`` skips the per-event findings and stats
    (most of the cost): the report then has the verdict and the findings about lines that give no
    usable event (malformed, cut short, not an object, a tool_use without a part), nothing else.
    """

    def __init__(
        self,
        *,
        keep_events: bool = False,
        first_line: int = 1,
        offset: int = 0,
        on_event: EventHook | None = None,
        verdict_only: bool = False,
        rider=None,
    ) -> None:
        if verdict_only and keep_events:
            raise ValueError("verdict_only keeps no event records")
        if verdict_only and rider is not None:
            raise ValueError("a rider takes the events the findings take: none with verdict_only")
        self._on_event = on_event
        self._verdict_only = verdict_only
        self._framer = LineFramer(first_line=first_line, offset=offset, huge_check=huge_line_error)
        self._verdict = VerdictMachine()
        steps = StepTracker()
        self._findings = FindingsCollector(steps)
        self._stats = StatsCollector(steps, self._findings.add)
        self._take_event = EventPass(self._findings, self._stats, rider).take
        self.events: list[EventRecord] | None = [] if keep_events else None
        self.event_count = 0
        self.line_count = 0
        self._step = 0
        self._finished = False

    # --- feeding ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> int:
        """Add bytes; returns how many new events they completed."""
        before = self.event_count
        batch = self._framer.feed(data)
        if batch is not None:
            self._take_batch(batch)
        return self.event_count - before

    def finish(self) -> TraceReport:
        """End of stream: the unterminated last line counts, end-of-stream findings are added."""
        if not self._finished:
            self._close_framer()
            if not self._verdict_only:  # its end-of-stream checks need every event
                self._findings.finish()
            self._finished = True
        return self.report()

    def _close_framer(self) -> None:
        if self._framer is not None and not self._framer.closed:
            batch = self._framer.close()
            if batch is not None:
                self._take_batch(batch)

    # --- results ------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        return self._findings.findings

    @property
    def stats(self) -> Stats:
        return self._stats.stats

    @property
    def bytes_seen(self) -> int:
        if self._framer is None:
            return self._bytes_before_framer
        return self._bytes_before_framer + self._framer.bytes_framed - self._framer.first_offset

    def verdict(self) -> Verdict:
        """The verdict if the stream ended now (final once :meth:`finish` was called)."""
        return self._verdict.verdict()

    def report(self) -> TraceReport:
        return TraceReport(
            self.verdict(), list(self.findings), self.stats, self.event_count, self.line_count, self.bytes_seen
        )

    # --- parts of one stream, analysed apart (see ``parallel``) -------------------------------
    def end_part(self, *, last: bool) -> None:
        """No more bytes for this part; the stream's other parts are analysed apart.

        A part other than the last ends on a line boundary. The framer is dropped
        so the analysis can be sent to another process.
        """
        if last:
            self._close_framer()
        self._bytes_before_framer = self.bytes_seen
        self._framer = None
        self._on_event = self._take_event = None  # no event comes after; its rider goes back on its own

    def merge(self, later: TraceAnalysis) -> None:
        """Append the analysis of the stream's next part, made on its own (both ended)."""
        if self.events is not None or later.events is not None:
            raise ValueError("merging is for analyses that keep no event records")
        later._findings.shift_events(self.event_count)
        self._verdict.merge(later._verdict)
        self._findings.merge(later._findings)
        self._stats.merge(later._stats)
        self.event_count += later.event_count
        self.line_count = later.line_count or self.line_count
        self._bytes_before_framer += later.bytes_seen

    _bytes_before_framer = 0

    # --- the hot loop -------------------------------------------------------------------------
    def _take_batch(self, batch: LineBatch) -> None:
        # The hot loop: one orjson call per line; everything else is the rare path.
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        verdict_event = self._verdict.event
        take_value = self._take_value
        take_exactly = self._take_exactly
        may_split = batch.may_split
        deep_bytes = 2 * DEEP_NESTING
        line = batch.first_line
        offset = batch.offset
        if batch.huge is not None:
            self._take_huge(batch.huge, line, offset, not batch.terminated)
            line += 1
            offset += batch.huge.length + 1
        for raw in batch.lines:
            size = len(raw)
            try:
                value = loads(raw)
            except decode_error:
                take_exactly(raw, line, offset, not batch.terminated)
            else:
                if (
                    (may_split and wrapper_may_split(raw))
                    or (size > deep_bytes and may_nest_deeply(raw, _bytes_outside_known_strings(value, size)))
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
        if self._on_event is not None:
            self._on_event(value, line, offset, size, piece)
        if type(value) is dict:
            kind = value.get("type")
            if self._verdict_only:
                if kind == "tool_use":
                    self._findings.calls.check_part(line, index, value)
                return
            if kind == "step_start":
                self._step += 1
            self._take_event(line, index, value, kind)
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
        if not counted(timestamp):
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
            self._verdict.undecodable(line, error, offset + error.start, terminated=not unterminated)
            self._findings.undecodable(line, first_index if exact.events else None, error)
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


    def _take_huge(self, huge: HugeLine, line: int, offset: int, unterminated: bool) -> None:
        """A line too long to hold: one malformed event; its verdict decided as the wrapper would."""
        index = self.event_count
        self.event_count += 1
        if huge.bad_utf8 is not None:
            self._verdict.undecodable(line, huge.bad_utf8, offset + huge.bad_utf8_at, terminated=not unterminated)
            self._findings.undecodable(line, index, huge.bad_utf8)
        else:
            self._verdict.unparsable(line, huge.error)
            self._findings.malformed(line, index, huge.error, truncated=unterminated)
        if self.events is not None:
            self.events.append(EventRecord(index, line, offset, huge.length, MALFORMED, None, self._step))


def analyze_bytes(data: bytes, *, keep_events: bool = False) -> tuple[TraceReport, TraceAnalysis]:
    analysis = TraceAnalysis(keep_events=keep_events)
    analysis.feed(data)
    return analysis.finish(), analysis


def analyze_path(path: str | os.PathLike[str], *, keep_events: bool = False,
                 rider=None) -> tuple[TraceReport, TraceAnalysis]:  # fmt: skip
    """Stream a trace file through the analysis (OSError propagates to the caller). ``rider``: rules
    that ride on this one parse of every line (see :class:`~smoldata_tui.trace.event_pass.EventPass`)."""
    analysis = TraceAnalysis(keep_events=keep_events, rider=rider)
    with open(path, "rb", buffering=0) as handle:
        # read(n) allocates n bytes first: a small trace (a fleet's thousands) is read by its size
        chunk_size = min(CHUNK_SIZE, max(os.fstat(handle.fileno()).st_size + 1, 1 << 16))
        while chunk := handle.read(chunk_size):
            analysis.feed(chunk)
    return analysis.finish(), analysis
