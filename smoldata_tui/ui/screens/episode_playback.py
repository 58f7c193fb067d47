"""``--speed X`` on the episode screen: a clock on a timer, releasing the trace to the reader,
and the keys that drive it (a mixin of EpisodeScreen)."""

from __future__ import annotations

import time

from textual.screen import Screen

from smoldata_tui.ui.playback import PlaybackClock, PlaybackSchedule, build_schedule
from smoldata_tui.ui.trace_follower import TraceFollower


TICK_SECONDS = 0.05


class PlaybackController:
    """Owns the :class:`PlaybackClock`; everything it releases reaches the screen through the
    same :class:`TraceFollower` messages as a live run."""

    def __init__(self, screen: Screen, speed: float) -> None:
        self.screen = screen
        self.speed = speed
        self.clock: PlaybackClock | None = None
        self._last_tick = 0.0

    def start(self) -> None:
        """Scan the file for line ends and timestamps (on a worker), then start the clock."""
        self.screen.run_worker(self._scan, thread=True, exclusive=True, group="playback-schedule", exit_on_error=False)

    def _scan(self) -> None:
        screen = self.screen
        try:
            schedule = build_schedule(screen.path)
        except OSError as exc:
            screen.post_message(TraceFollower.Failed(f"cannot read {screen.path.name}: {exc.strerror or exc}"))
            return
        screen.app.call_from_thread(self._started, schedule)

    def _started(self, schedule: PlaybackSchedule) -> None:
        self.clock = PlaybackClock(schedule, self.speed)
        self._last_tick = time.monotonic()
        self.screen.follower.release_until(self.clock.limit)
        self.screen.set_interval(TICK_SECONDS, self._tick)
        self.screen.refresh_header()

    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        clock = self.clock
        if clock is None or clock.done:
            return
        if clock.tick(elapsed):
            self._release()
        elif not clock.paused:
            self.screen.refresh_header()  # the clock in the header moves on

    def _release(self) -> None:
        clock = self.clock
        assert clock is not None
        self.screen.follower.release_until(None if clock.done else clock.limit)
        self.screen.refresh_header()

    # --- what the keys do ---------------------------------------------------------------------
    def toggle(self) -> None:
        if self.clock is not None:
            self.clock.toggle()
            self._last_tick = time.monotonic()
            self.screen.refresh_header()

    def step(self) -> None:
        if self.clock is not None and self.clock.step():
            self.screen.timeline.tail = True  # show the event just released
            self._release()

    def change_speed(self, factor: float) -> None:
        if self.clock is not None:
            self.clock.change_speed(factor)
            self.screen.refresh_header()

    def to_end(self) -> None:
        if self.clock is not None and not self.clock.done:
            self.clock.finish()
            self._release()

    def activity(self) -> str:
        """``playback ▶ playing 2×  +12.3s / +84.0s`` for the header."""
        clock = self.clock
        if clock is None:
            return "playback: reading the timestamps\u2026"
        state = "done" if clock.done else ("\u23f8 paused" if clock.paused else "\u25b6 playing")
        return (
            f"playback {state} {clock.speed:g}\u00d7  +{clock.position_ms / 1000:.1f}s"
            f" / +{clock.schedule.duration_ms / 1000:.1f}s"
        )


class EpisodePlaybackKeys:  # mixed into EpisodeScreen, which is a Screen
    """Space, ``.``, ``<`` and ``>``; ``check_action`` offers them only when the screen plays a trace
    back (``--speed``)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("playback_"):
            return self.speed is not None
        return True

    def action_playback_toggle(self) -> None:
        if self.playback is not None:
            self.playback.toggle()

    def action_playback_step(self) -> None:
        if self.playback is not None:
            self.playback.step()

    def action_playback_speed(self, factor: float) -> None:
        if self.playback is not None:
            self.playback.change_speed(float(factor))
