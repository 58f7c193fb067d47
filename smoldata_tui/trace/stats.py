"""Episode statistics: steps, calls, tokens, cost and where the time went.

Only numbers the analysis counts (:mod:`smoldata_tui.trace.numbers`: finite, within ±2**53) are
summed; any other cost, token count or time is left out and said as a ``bad_number`` finding, so
every total is a number JSON holds and a cached result is the fresh one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.numbers import COUNTED_LIMIT, describe, json_safe
from smoldata_tui.trace.steps import StepTracker

_TOKEN_KEYS = ("input", "output", "reasoning", "cache_read", "cache_write")


@dataclass
class Stats:
    events: int = 0
    events_by_type: Counter = field(default_factory=Counter)
    steps: int = 0
    steps_finished: int = 0
    calls_by_tool: Counter = field(default_factory=Counter)
    calls_by_status: Counter = field(default_factory=Counter)
    tokens: dict = field(default_factory=lambda: dict.fromkeys(_TOKEN_KEYS, 0))
    cost: float = 0.0
    call_durations_ms: list[float] = field(default_factory=list)
    step_durations_ms: list[float] = field(default_factory=list)
    first_timestamp: float | None = None
    last_timestamp: float | None = None
    tool_time_ms: float = 0.0
    model_time_ms: float = 0.0
    last_tool: str | None = None  # the tool of the last tool_use: part of an episode's signature

    @property
    def calls(self) -> int:
        return sum(self.calls_by_tool.values())

    @property
    def wall_time_ms(self) -> float:
        if self.first_timestamp is None or self.last_timestamp is None:
            return 0.0
        return max(0.0, self.last_timestamp - self.first_timestamp)

    def to_json(self) -> dict:
        durations = sorted(self.call_durations_ms)
        return {
            "events": self.events,
            "events_by_type": dict(self.events_by_type),
            "steps": self.steps,
            "steps_finished": self.steps_finished,
            "calls": self.calls,
            "calls_by_tool": dict(self.calls_by_tool),
            "calls_by_status": dict(self.calls_by_status),
            "tokens": {key: json_safe(self.tokens.get(key, 0)) for key in _TOKEN_KEYS},
            "cost": round(self.cost, 6),
            "wall_time_ms": self.wall_time_ms,
            "model_time_ms": self.model_time_ms,
            "tool_time_ms": self.tool_time_ms,
            "call_duration_ms": {
                "count": len(durations),
                "total": sum(durations),
                "max": durations[-1] if durations else 0,
                "median": durations[len(durations) // 2] if durations else 0,
            },
            "step_duration_ms": {
                "count": len(self.step_durations_ms),
                "total": sum(self.step_durations_ms),
                "max": max(self.step_durations_ms, default=0),
            },
        }



def tally(counter: Counter, key: object) -> None:
    if type(key) is not str:
        key = repr(key)
    counter[key] = counter.get(key, 0) + 1


class StatsCollector:
    """Accumulates :class:`Stats` event by event (fed by :mod:`event_pass`; a hot path: keep it lean).

    Steps are matched and timed by the shared :class:`StepTracker`; this
    collector feeds it the tool intervals and reads its timings back.
    """

    def __init__(self, steps: StepTracker, add_finding: Callable[..., Finding] | None = None) -> None:
        self._stats = self.totals = Stats()  # totals: what event_pass.EventPass counts into
        self._steps = steps
        self._add_finding = add_finding  # where a number left out is said (FindingsCollector.add)

    @property
    def stats(self) -> Stats:
        stats = self._stats
        stats.step_durations_ms = self._steps.durations
        stats.tool_time_ms = self._steps.tool_time
        stats.model_time_ms = self._steps.model_time
        return stats

    def left_out(self, name: str, value: object, line: int, index: int) -> None:
        if self._add_finding is not None:
            self._add_finding(
                "bad_number",
                Severity.WARNING,
                line,
                index,
                f"{name} is {describe(value)}: not a finite number within ±2^53, so the stats leave it out",
            )

    def tool_use(self, part: dict, message_id: object, line: int, index: int) -> None:
        """A tool_use event's part (an object); ``message_id``: its messageID, hashable."""
        stats = self._stats
        tool = part.get("tool")
        by_tool = stats.calls_by_tool
        if type(tool) is str:
            by_tool[tool] = by_tool.get(tool, 0) + 1
            stats.last_tool = tool
        else:
            tally(by_tool, tool)
            stats.last_tool = repr(tool)
        state = part.get("state")
        by_status = stats.calls_by_status
        if type(state) is not dict:
            tally(by_status, "(no state)")
            return
        status = state.get("status")
        if type(status) is str:
            by_status[status] = by_status.get(status, 0) + 1
        else:
            tally(by_status, status)
        time = state.get("time")
        if type(time) is dict:
            start, end = time.get("start"), time.get("end")
            if not (type(start) is int and -COUNTED_LIMIT <= start <= COUNTED_LIMIT):  # the usual: a counted int
                start = self._counted(start, "state.time.start", line, index)
            if not (type(end) is int and -COUNTED_LIMIT <= end <= COUNTED_LIMIT):
                end = self._counted(end, "state.time.end", line, index)
            if start is not None and end is not None and end >= start:
                stats.call_durations_ms.append(end - start)
                self._steps.tool(message_id, start, end)

    def _counted(self, value: object, name: str, line: int, index: int) -> int | float | None:
        """The value when it is a number the stats count; None otherwise (said unless absent)."""
        if type(value) is int or type(value) is float:
            if -COUNTED_LIMIT <= value <= COUNTED_LIMIT:
                return value
            self.left_out(name, value, line, index)
        elif value is not None:
            self.left_out(name, value, line, index)
        return None

    def step_finish(self, part: dict, line: int, index: int) -> None:
        stats = self._stats
        stats.steps_finished += 1
        tokens = part.get("tokens")
        if type(tokens) is dict:
            totals = stats.tokens
            counted = self._counted
            value = counted(tokens.get("input"), "tokens.input", line, index)
            if value is not None:
                totals["input"] += value
            value = counted(tokens.get("output"), "tokens.output", line, index)
            if value is not None:
                totals["output"] += value
            value = counted(tokens.get("reasoning"), "tokens.reasoning", line, index)
            if value:
                totals["reasoning"] += value
            cache = tokens.get("cache")
            if type(cache) is dict:
                value = counted(cache.get("read"), "tokens.cache.read", line, index)
                if value:
                    totals["cache_read"] += value
                value = counted(cache.get("write"), "tokens.cache.write", line, index)
                if value:
                    totals["cache_write"] += value
        cost = self._counted(part.get("cost"), "cost", line, index)
        if cost:
            stats.cost += cost

    def merge(self, later: StatsCollector) -> None:
        """Continue with the next part of the stream (steps are merged by their tracker)."""
        mine, theirs = self._stats, later._stats
        mine.last_tool = theirs.last_tool if theirs.last_tool is not None else mine.last_tool
        mine.events += theirs.events
        mine.steps += theirs.steps
        mine.steps_finished += theirs.steps_finished
        for counter, more in (
            (mine.events_by_type, theirs.events_by_type),
            (mine.calls_by_tool, theirs.calls_by_tool),
            (mine.calls_by_status, theirs.calls_by_status),
            (mine.tokens, theirs.tokens),
        ):
            for key, value in more.items():
                counter[key] = counter.get(key, 0) + value
        mine.cost += theirs.cost
        mine.call_durations_ms += theirs.call_durations_ms
        if mine.first_timestamp is None:
            mine.first_timestamp = theirs.first_timestamp
        if theirs.last_timestamp is not None:
            mine.last_timestamp = theirs.last_timestamp

