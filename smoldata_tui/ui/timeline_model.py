"""The rows of the timeline: events as the engine recorded them, minus what the filter hides.

The engine's worker thread appends to ``events`` and ``findings``; this model only ever reads
the first ``count`` / ``finding_count`` items, the numbers a message said were complete, so it
never sees a half-built record. Everything here runs on the UI thread and is plain Python.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right, insort
from itertools import chain

from smoldata_tui.trace import EventRecord, Finding, Severity
from smoldata_tui.ui.filtering import NO_FILTER, EventFilter

_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}


class TimelineModel:
    def __init__(self) -> None:
        self.filter: EventFilter = NO_FILTER
        self.reset([], [])

    def reset(self, events: list[EventRecord], findings: list[Finding]) -> None:
        """Start over on a new analysis (first open, or the file was truncated/replaced)."""
        self.events = events
        self.findings = findings
        self.count = 0
        self.finding_count = 0
        self.by_event: dict[int, list[Finding]] = {}
        self.worst: dict[int, Severity] = {}
        self.finding_events: list[int] = []  # sorted events that have findings
        self.severity_counts: dict[Severity, int] = {severity: 0 for severity in Severity}
        self.step_started: dict[int, float] = {}  # step number -> its step_start timestamp
        self.first_timestamp: float | None = None
        self.max_line = 0
        self.max_step = 0
        self.visible: array | None = None if not self.filter.active else array("i")

    # --- rows ---------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return self.count if self.visible is None else len(self.visible)

    def event_at(self, row: int) -> int:
        return row if self.visible is None else self.visible[row]

    def row_of(self, event: int) -> int | None:
        """The row showing ``event``, or None when the filter hides it (or it is not loaded)."""
        if self.visible is None:
            return event if 0 <= event < self.count else None
        row = bisect_left(self.visible, event)
        return row if row < len(self.visible) and self.visible[row] == event else None

    def row_near(self, event: int) -> int:
        """The row of ``event``, or of the next shown event after it (the last row at worst)."""
        if self.visible is None:
            return max(0, min(event, self.count - 1))
        return max(0, min(bisect_left(self.visible, event), len(self.visible) - 1))

    def record(self, event: int) -> EventRecord:
        return self.events[event]

    # --- growth -------------------------------------------------------------------------------
    def extend(self, count: int) -> int:
        """Take events up to ``count``; returns how many rows that added."""
        before = self.row_count
        events, step_started = self.events, self.step_started
        matches, worst = self.filter.matches, self.worst
        visible = self.visible
        for index in range(self.count, count):
            record = events[index]
            timestamp = record.timestamp
            if timestamp is not None and self.first_timestamp is None:
                self.first_timestamp = timestamp
            if record.kind == "step_start" and timestamp is not None:
                step_started.setdefault(record.step, timestamp)
            if visible is not None and matches(record, worst.get(index)):
                visible.append(index)
        if count > self.count:
            last = events[count - 1]
            self.max_line = max(self.max_line, last.line)
            self.max_step = max(self.max_step, last.step)
            self.count = count
        return self.row_count - before

    def add_findings(self, count: int) -> bool:
        """Take findings up to ``count``; True when that changed which rows are shown."""
        if count <= self.finding_count:
            return False
        touched = False
        for finding in self.findings[self.finding_count : count]:
            self.severity_counts[finding.severity] += 1
            event = finding.event
            if event is None:
                continue
            self.by_event.setdefault(event, []).append(finding)
            previous = self.worst.get(event)
            if previous is None:
                insort(self.finding_events, event)
            if previous is None or _RANK[finding.severity] > _RANK[previous]:
                self.worst[event] = finding.severity
                touched = True
        self.finding_count = count
        if touched and (self.filter.findings_only or self.filter.errors_only):
            self._rebuild()
            return True
        return False

    # --- filtering ----------------------------------------------------------------------------
    def set_filter(self, event_filter: EventFilter) -> None:
        self.filter = event_filter
        self._rebuild()

    def _rebuild(self) -> None:
        event_filter = self.filter
        if not event_filter.active:
            self.visible = None
            return
        events, worst, matches = self.events, self.worst, event_filter.matches
        if event_filter.findings_only or event_filter.errors_only:
            candidates = [event for event in self.finding_events if event < self.count]
        else:
            candidates = range(self.count)
        self.visible = array("i", [event for event in candidates if matches(events[event], worst.get(event))])

    # --- findings navigation ------------------------------------------------------------------
    def next_finding_event(self, after: int, *, backwards: bool = False) -> int | None:
        """The next (previous) event with a finding that the filter shows, wrapping around."""
        events = self.finding_events
        if not events:
            return None
        if backwards:
            start = bisect_left(events, after) - 1
            order = chain(range(start, -1, -1), range(len(events) - 1, start, -1))
        else:
            start = bisect_right(events, after)
            order = chain(range(start, len(events)), range(0, start))
        for position in order:
            event = events[position]
            if event < self.count and self.row_of(event) is not None:
                return event
        return None

    def findings_of(self, event: int) -> list[Finding]:
        return self.by_event.get(event, [])

    def event_for_line(self, line: int) -> int | None:
        """The first event of a 1-based physical line (loaded events only)."""
        events = self.events
        index = bisect_left(events, line, hi=self.count, key=lambda record: record.line)
        return index if index < self.count and events[index].line == line else None
