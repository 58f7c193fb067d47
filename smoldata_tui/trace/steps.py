"""Steps: each ``step_start`` matched with its ``step_finish`` by messageID, and timed.

A step_start whose messageID is already open replaces the open step (which is
reported as never finished); a step_finish with no open step is an orphan.
These rules only look back at open steps, so a stream cut into parts can be
put back together exactly (:meth:`StepTracker.merge`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


def message_id_of_part(part: dict) -> object:
    """part.messageID, made hashable (steps are keyed by it)."""
    message_id = part.get("messageID")
    if type(message_id) is str:
        return message_id
    try:
        hash(message_id)
    except TypeError:
        return repr(message_id)
    return message_id


def union_length(intervals: list[tuple[float, float]]) -> float:
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


@dataclass(slots=True)
class OpenStep:
    line: int
    event: int
    started: float | None  # timestamp of the step_start
    tools: list[tuple[float, float]] = field(default_factory=list)


@dataclass(slots=True)
class Orphan:
    """A step_finish that found no open step (yet: an earlier part may hold its start)."""

    message_id: object
    line: int
    event: int
    finished: float | None
    tools: list[tuple[float, float]]  # tool calls of its message seen before it
    finding: object = None  # what the findings made of it, dropped if an earlier part claims it


class StepTracker:
    def __init__(self) -> None:
        self.open: dict[object, OpenStep] = {}
        self.replaced: list[tuple[OpenStep, int]] = []  # open steps a reused messageID ended: (step, line)
        self.orphans: list[Orphan] = []
        self.last_start: int | None = None  # line of the last step_start
        self.durations: list[float] = []
        self.tool_time = 0.0
        self.model_time = 0.0
        # Only for merging: the first step event of each messageID in this part, as the line
        # of a step_start, or None for a step_finish; and tool time of messages not yet seen.
        self._first_event: dict[object, int | None] = {}
        self._early_tools: dict[object, list[tuple[float, float]]] = {}

    def start(self, message_id: object, line: int, event: int, timestamp: float | None) -> None:
        self._first_event.setdefault(message_id, line)
        self.last_start = line
        previous = self.open.get(message_id)
        if previous is not None:
            self.replaced.append((previous, line))
        self.open[message_id] = OpenStep(line, event, timestamp)

    def tool(self, message_id: object, start: float, end: float) -> None:
        step = self.open.get(message_id)
        if step is not None:
            step.tools.append((start, end))
        elif message_id not in self._first_event:
            self._early_tools.setdefault(message_id, []).append((start, end))

    def finish(self, message_id: object, line: int, event: int, timestamp: float | None) -> Orphan | None:
        """Close the step; returns the orphan when no step of that messageID is open."""
        self._first_event.setdefault(message_id, None)
        step = self.open.pop(message_id, None)
        if step is None:
            orphan = Orphan(message_id, line, event, timestamp, self._early_tools.pop(message_id, []))
            self.orphans.append(orphan)
            return orphan
        self._time(step.started, timestamp, step.tools)
        return None

    def _time(self, started: float | None, finished: float | None, tools: list) -> None:
        if started is None or finished is None or finished < started:
            return
        duration = finished - started
        tool_time = min(duration, union_length(tools)) if tools else 0
        self.durations.append(duration)
        self.tool_time += tool_time
        self.model_time += duration - tool_time

    def shift_events(self, base: int) -> None:
        for step in (*self.open.values(), *(step for step, _ in self.replaced)):
            step.event += base
        for orphan in self.orphans:
            orphan.event += base

    def merge(self, later: StepTracker) -> list[Orphan]:
        """Continue with the next part; returns ``later``'s orphans that an open step here claims."""
        claimed: list[Orphan] = []
        for message_id, step in list(self.open.items()):
            first = later._first_event.get(message_id, ...)
            if first is ...:  # not mentioned later: its tools there belong to this step
                step.tools += later._early_tools.pop(message_id, [])
                continue
            del self.open[message_id]
            step.tools += later._early_tools.pop(message_id, [])
            if first is None:  # later's first word on it is a step_finish: that closes this step
                orphan = next(o for o in later.orphans if o.message_id == message_id)
                claimed.append(orphan)
                self._time(step.started, orphan.finished, step.tools + orphan.tools)
            else:  # a step_start reuses the messageID while this step is open
                self.replaced.append((step, first))
        taken = {id(orphan) for orphan in claimed}
        self.orphans += [orphan for orphan in later.orphans if id(orphan) not in taken]
        self.replaced += later.replaced
        self.open.update(later.open)
        for message_id, first in later._first_event.items():
            self._first_event.setdefault(message_id, first)
        for message_id, tools in later._early_tools.items():
            if message_id not in self._first_event:  # still no step event for it anywhere
                self._early_tools.setdefault(message_id, []).extend(tools)
        if later.last_start is not None:
            self.last_start = later.last_start
        self.durations += later.durations
        self.tool_time += later.tool_time
        self.model_time += later.model_time
        return claimed
