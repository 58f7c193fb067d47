"""Episode statistics: steps, calls, tokens, cost and where the time went."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


def _number(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return 0


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


class StatsCollector:
    """Accumulates :class:`Stats` event by event."""

    def __init__(self) -> None:
        self.stats = Stats()
        self._open_steps: dict[object, float | None] = {}  # messageID -> start timestamp
        self._step_tools: dict[object, list[tuple[float, float]]] = {}

    def event(self, event: dict, kind: object) -> None:
        stats = self.stats
        stats.events += 1
        stats.events_by_type[kind if isinstance(kind, str) else repr(kind)] += 1
        timestamp = event.get("timestamp")
        if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
            if stats.first_timestamp is None:
                stats.first_timestamp = timestamp
            stats.last_timestamp = timestamp
        part = event.get("part")
        if not isinstance(part, dict):
            return
        if kind == "tool_use":
            self._tool_use(part)
        elif kind == "step_start":
            stats.steps += 1
            try:
                self._open_steps[part.get("messageID")] = timestamp
            except TypeError:
                pass
        elif kind == "step_finish":
            self._step_finish(part, timestamp)

    def _tool_use(self, part: dict) -> None:
        stats = self.stats
        tool = part.get("tool")
        stats.calls_by_tool[tool if isinstance(tool, str) else repr(tool)] += 1
        state = part.get("state")
        if not isinstance(state, dict):
            stats.calls_by_status["(no state)"] += 1
            return
        status = state.get("status")
        stats.calls_by_status[status if isinstance(status, str) else repr(status)] += 1
        time = state.get("time")
        if isinstance(time, dict):
            start, end = _number(time.get("start")), _number(time.get("end"))
            if start and end >= start:
                stats.call_durations_ms.append(end - start)
                try:
                    self._step_tools.setdefault(part.get("messageID"), []).append((start, end))
                except TypeError:
                    pass

    def _step_finish(self, part: dict, timestamp: object) -> None:
        stats = self.stats
        stats.steps_finished += 1
        tokens = part.get("tokens")
        if isinstance(tokens, dict):
            stats.tokens["input"] += _number(tokens.get("input"))
            stats.tokens["output"] += _number(tokens.get("output"))
            stats.tokens["reasoning"] += _number(tokens.get("reasoning"))
            cache = tokens.get("cache")
            if isinstance(cache, dict):
                stats.tokens["cache_read"] += _number(cache.get("read"))
                stats.tokens["cache_write"] += _number(cache.get("write"))
        stats.cost += _number(part.get("cost"))
        try:
            message_id = part.get("messageID")
            started = self._open_steps.pop(message_id, None)
            tools = self._step_tools.pop(message_id, [])
        except TypeError:
            return
        if isinstance(started, (int, float)) and isinstance(timestamp, (int, float)) and timestamp >= started:
            duration = timestamp - started
            tool_time = min(duration, _union_length(tools))
            stats.step_durations_ms.append(duration)
            stats.tool_time_ms += tool_time
            stats.model_time_ms += duration - tool_time
