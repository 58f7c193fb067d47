"""Episode statistics: steps, calls, tokens, cost and where the time went."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


def _union_length(intervals: list[tuple[float, float]]) -> float:
    """Total time covered by possibly overlapping intervals (parallel tool calls)."""
    total = 0.0
    end_so_far = None
    for start, end in sorted(intervals):
        if end_so_far is None or start > end_so_far:
            total += end - start
            end_so_far = end
        elif end > end_so_far:
            total += end - end_so_far
            end_so_far = end
    return total


@dataclass
class Stats:
    events: int = 0
    events_by_type: Counter = field(default_factory=Counter)
    steps: int = 0
    steps_finished: int = 0
    calls_by_tool: Counter = field(default_factory=Counter)
    calls_by_status: Counter = field(default_factory=Counter)
    tokens: Counter = field(default_factory=Counter)  # input, output, reasoning, cache_read, cache_write
    cost: float = 0.0
    call_durations_ms: list[float] = field(default_factory=list)
    step_durations_ms: list[float] = field(default_factory=list)
    first_timestamp: float | None = None
    last_timestamp: float | None = None
    tool_time_ms: float = 0.0
    model_time_ms: float = 0.0

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
            "tokens": {key: self.tokens.get(key, 0) for key in _TOKEN_KEYS},
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


_TOKEN_KEYS = ("input", "output", "reasoning", "cache_read", "cache_write")


def _tally(counter: Counter, key: object) -> None:
    if type(key) is not str:
        key = repr(key)
    counter[key] = counter.get(key, 0) + 1


class StatsCollector:
    """Accumulates :class:`Stats` event by event (a hot path: keep it lean)."""

    def __init__(self) -> None:
        self.stats = Stats()
        self._open_steps: dict[object, float | None] = {}  # messageID -> start timestamp
        self._step_tools: dict[object, list[tuple[float, float]]] = {}

    def event(self, event: dict, kind: object) -> None:
        stats = self.stats
        stats.events += 1
        _tally(stats.events_by_type, kind)
        timestamp = event.get("timestamp")
        if type(timestamp) is int or type(timestamp) is float:
            if stats.first_timestamp is None:
                stats.first_timestamp = timestamp
            stats.last_timestamp = timestamp
        else:
            timestamp = None
        if kind == "tool_use":
            part = event.get("part")
            if type(part) is dict:
                self._tool_use(part)
        elif kind == "step_start":
            stats.steps += 1
            part = event.get("part")
            if type(part) is dict:
                message_id = part.get("messageID")
                if type(message_id) is str:
                    self._open_steps[message_id] = timestamp
        elif kind == "step_finish":
            part = event.get("part")
            if type(part) is dict:
                self._step_finish(part, timestamp)

    def _tool_use(self, part: dict) -> None:
        stats = self.stats
        _tally(stats.calls_by_tool, part.get("tool"))
        state = part.get("state")
        if type(state) is not dict:
            _tally(stats.calls_by_status, "(no state)")
            return
        _tally(stats.calls_by_status, state.get("status"))
        time = state.get("time")
        if type(time) is dict:
            start, end = time.get("start"), time.get("end")
            if type(start) in _NUMBERS and type(end) in _NUMBERS and end >= start:
                stats.call_durations_ms.append(end - start)
                message_id = part.get("messageID")
                if type(message_id) is str:
                    tools = self._step_tools.get(message_id)
                    if tools is None:
                        self._step_tools[message_id] = [(start, end)]
                    else:
                        tools.append((start, end))

    def _step_finish(self, part: dict, timestamp: float | None) -> None:
        stats = self.stats
        stats.steps_finished += 1
        tokens = part.get("tokens")
        if type(tokens) is dict:
            totals = stats.tokens
            for key in ("input", "output", "reasoning"):
                value = tokens.get(key)
                if type(value) in _NUMBERS:
                    totals[key] += value
            cache = tokens.get("cache")
            if type(cache) is dict:
                for key, name in (("read", "cache_read"), ("write", "cache_write")):
                    value = cache.get(key)
                    if type(value) in _NUMBERS:
                        totals[name] += value
        cost = part.get("cost")
        if type(cost) in _NUMBERS:
            stats.cost += cost
        message_id = part.get("messageID")
        if type(message_id) is not str:
            return
        started = self._open_steps.pop(message_id, None)
        tools = self._step_tools.pop(message_id, ())
        if started is not None and timestamp is not None and timestamp >= started:
            duration = timestamp - started
            tool_time = min(duration, _union_length(tools)) if tools else 0
            stats.step_durations_ms.append(duration)
            stats.tool_time_ms += tool_time
            stats.model_time_ms += duration - tool_time


_NUMBERS = (int, float)
