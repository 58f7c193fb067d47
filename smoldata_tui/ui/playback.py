"""Timed playback (``replay --speed X``): release a saved trace line by line, on its own clock.

The file is scanned once for where each line ends and when it was written (its
``timestamp``); the :class:`PlaybackClock` then says, as wall time passes, how many bytes the
reader may take. So playback is the follow path with a brake: the viewer, the findings and
the verdict see the trace grow exactly as they would see a live run. Plain Python.
"""

from __future__ import annotations

import os
import re
from array import array
from bisect import bisect_right
from dataclasses import dataclass

_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*(-?\d+(?:\.\d+)?)')
_HEAD = 4096  # OpenCode writes "type" and "timestamp" first: the head of a line is enough
CHUNK = 4 << 20
MIN_SPEED, MAX_SPEED = 0.01, 10_000.0


@dataclass
class PlaybackSchedule:
    ends: array  # byte offset just after each line (its newline included)
    times: array  # ms since the first timestamp, never decreasing

    @property
    def lines(self) -> int:
        return len(self.ends)

    @property
    def duration_ms(self) -> float:
        return self.times[-1] if self.times else 0.0


def build_schedule(path: str | os.PathLike[str]) -> PlaybackSchedule:
    """One pass over the file. Lines without a timestamp (or going back) keep the last time."""
    ends, times = array("q"), array("d")
    clock = _LineClock()
    with open(path, "rb", buffering=0) as handle:
        offset = 0
        tail = b""
        while True:
            data = handle.read(CHUNK)
            if not data:
                break
            data = tail + data
            start = 0
            while (newline := data.find(b"\n", start)) != -1:
                ends.append(offset + newline + 1)
                times.append(clock.time_of(data, start, newline))
                start = newline + 1
            offset += start
            tail = data[start:]
        if tail:  # an unterminated last line: released with the end of the file
            ends.append(offset + len(tail))
            times.append(clock.time_of(tail, 0, len(tail)))
    return PlaybackSchedule(ends, times)


class _LineClock:
    """Milliseconds since the first timestamp, never going back."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0

    def time_of(self, data: bytes, start: int, end: int) -> float:
        match = _TIMESTAMP.search(data, start, min(end, start + _HEAD))
        if match is not None:
            value = float(match.group(1))
            if self.first is None:
                self.first = value
            self.last = max(self.last, value - self.first)
        return self.last


class PlaybackClock:
    """Trace time advancing at ``speed`` × wall time; pause, step and jump to the end."""

    def __init__(self, schedule: PlaybackSchedule, speed: float) -> None:
        self.schedule = schedule
        self.speed = max(MIN_SPEED, min(MAX_SPEED, speed))
        self.position_ms = 0.0
        self.paused = False
        self.released = 0
        self._release_due()

    @property
    def done(self) -> bool:
        return self.released >= self.schedule.lines

    @property
    def limit(self) -> int:
        """How many bytes of the file the reader may take now."""
        return self.schedule.ends[self.released - 1] if self.released else 0

    def _release_due(self) -> None:
        self.released = max(self.released, bisect_right(self.schedule.times, self.position_ms))

    def tick(self, wall_seconds: float) -> bool:
        """Advance the clock; True when more lines were released."""
        if self.paused or self.done:
            return False
        before = self.released
        # a tick (or a stall of the UI) may carry the clock past the last event: it stops there
        self.position_ms = min(self.position_ms + wall_seconds * 1000 * self.speed, self.schedule.duration_ms)
        self._release_due()
        return self.released != before

    def step(self) -> bool:
        """Release exactly one more line and pause there."""
        self.paused = True
        if self.done:
            return False
        self.released += 1
        self.position_ms = max(self.position_ms, self.schedule.times[self.released - 1])
        return True

    def finish(self) -> None:
        self.released = self.schedule.lines
        self.position_ms = self.schedule.duration_ms

    def toggle(self) -> None:
        self.paused = not self.paused

    def change_speed(self, factor: float) -> None:
        self.speed = max(MIN_SPEED, min(MAX_SPEED, self.speed * factor))
