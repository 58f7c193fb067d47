"""One event's findings and stats in one call: the analysis's hot path.

Every event of every trace ``check`` reads passes here once. The findings and the stats each used
to take the event in a call of their own, read its timestamp and part again and dispatch on its
type through more calls; here the event is read once and the common kinds are handled inline.
What the event adds is unchanged, in the same order: the findings' (its envelope, then its kind's),
then the stats' (a number they leave out is said after those).
"""

from __future__ import annotations

from smoldata_tui.trace.findings import FindingsCollector
from smoldata_tui.trace.numbers import COUNTED_LIMIT
from smoldata_tui.trace.stats import StatsCollector, tally
from smoldata_tui.trace.steps import message_id_of_part


class EventPass:
    """Feeds each parsed event object to a stream's findings and stats, and to its rider.

    A rider is rules that take the same events without a parse of their own (``check``'s integrity
    and budget rules, ``episode/trace_rules.py``): ``tool_use(event, line, index)``,
    ``step_start(event, line, index)`` and ``step_finish(event, line, index)`` are called for those kinds of events
    only, before the findings take them.
    """

    __slots__ = ("_findings", "_said", "_steps", "_calls", "_collector", "_stats", "_rider")

    def __init__(self, findings: FindingsCollector, stats: StatsCollector, rider=None) -> None:
        self._rider = rider
        self._findings = findings
        self._said = findings.said
        self._steps = findings.steps
        self._calls = findings.calls
        self._collector = stats
        self._stats = stats.totals

    def take(self, line: int, index: int, event: dict, kind: object) -> None:
        findings = self._findings
        findings.events_seen += 1
        raw_timestamp = timestamp = event.get("timestamp")
        # a timestamp the stats do not count (NaN, Infinity…) is none at all (trace/numbers.py)
        if (type(timestamp) is int or type(timestamp) is float) and -COUNTED_LIMIT <= timestamp <= COUNTED_LIMIT:
            findings.timestamp(line, index, timestamp)
        else:
            timestamp = None
        session = event.get("sessionID")
        if session != findings.session and type(session) is str:
            findings.new_session(line, index, session)
        part = event.get("part")
        if type(part) is dict:
            message_id = part.get("messageID")
            if type(message_id) is not str:
                message_id = message_id_of_part(part)
        else:
            part = message_id = None

        rider = self._rider
        if rider is not None:
            if kind == "tool_use":
                rider.tool_use(event, line, index)
            elif kind == "step_start":
                rider.step_start(event, line, index)
            elif kind == "step_finish":
                rider.step_finish(event, line, index)

        # what the findings make of its kind
        if kind == "tool_use":
            self._said.add(message_id)
            self._calls.tool_use(line, index, event)
        elif kind == "step_start":
            self._steps.start(message_id, line, index, timestamp)
        elif kind == "step_finish":
            findings.step_finish(line, index, part, message_id, timestamp)
        elif kind == "text" or kind == "reasoning":
            self._said.add(message_id)
        elif kind == "error":
            findings.error(line, index, event)
        else:
            findings.unknown_type(line, index, kind)
            if message_id is not None:  # a step with an event we cannot read is not known to be empty
                self._said.add(message_id)

        # what the stats count of it
        stats = self._stats
        stats.events += 1
        by_type = stats.events_by_type
        if type(kind) is str:
            by_type[kind] = by_type.get(kind, 0) + 1
        else:
            tally(by_type, kind)
        if timestamp is not None:
            if stats.first_timestamp is None:
                stats.first_timestamp = timestamp
            stats.last_timestamp = timestamp
        elif raw_timestamp is not None:  # a number out of range, or no number at all ("yesterday")
            self._collector.left_out("timestamp", raw_timestamp, line, index)
        if part is not None:
            if kind == "tool_use":
                self._collector.tool_use(part, message_id, line, index)
            elif kind == "step_finish":
                self._collector.step_finish(part, line, index)
        if kind == "step_start":
            stats.steps += 1
