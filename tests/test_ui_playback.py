"""--speed X: timed playback on the trace's own timestamps (pause, step, jump to the end)."""

from __future__ import annotations

from smoldata_tui.ui.playback import PlaybackClock, build_schedule

from .conftest import SAMPLES
from .test_ui_helpers import SIZE, cursor_line, episode, replay_app, screen_lines, wait_for


def test_schedule_has_one_entry_per_line_with_monotonic_times(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"type":"a","timestamp":1000}\n'
        b"not json\n"
        b'{"type":"b","timestamp":3500}\n'
        b'{"type":"c","timestamp":2000}\n'  # a clock step back: keeps the later time
        b'{"type":"d","timestamp":4000'  # unterminated
    )
    schedule = build_schedule(path)
    assert list(schedule.times) == [0, 0, 2500, 2500, 3000]
    data = path.read_bytes()
    assert schedule.ends[-1] == len(data)
    assert [data[end - 1 : end] for end in schedule.ends[:-1]] == [b"\n"] * 4


def test_clock_releases_by_time_and_steps_and_finishes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(b'{"timestamp":%d}\n' % ms for ms in (0, 1000, 2000, 10000)))
    clock = PlaybackClock(build_schedule(path), speed=2)
    assert clock.released == 1 and clock.limit == len(b'{"timestamp":0}\n')
    assert not clock.tick(0.4)  # 800 ms of trace time
    assert clock.tick(0.1) and clock.released == 2
    clock.toggle()
    assert not clock.tick(10)  # paused
    clock.toggle()
    assert clock.step() and clock.released == 3 and clock.paused
    clock.change_speed(4)
    assert clock.speed == 8
    clock.finish()
    assert clock.done and clock.limit == path.stat().st_size


def test_the_clock_stops_at_the_last_event(tmp_path):
    """At 100× one 50 ms tick is 5 s of the trace: the clock shown must not run past its end."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(b'{"timestamp":%d}\n' % ms for ms in (0, 1000, 1200)))
    clock = PlaybackClock(build_schedule(path), speed=100)
    assert clock.tick(0.05) and clock.done
    assert clock.position_ms == clock.schedule.duration_ms == 1200


async def test_playback_releases_events_on_their_clock_pause_step_and_end():
    # A quarter of real time: the next event is written 1.24 s in, so it is due 4.96 s after the
    # first (room for a loaded machine between the checks below).
    app = replay_app(SAMPLES / "clean_pass.jsonl", speed=0.25)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
        screen = episode(app)
        await wait_for(pilot, lambda: screen.model.count == 1, what="the first event")
        await pilot.pause(0.3)
        assert screen.model.count == 1
        assert "playback" in screen_lines(app)[1]
        await pilot.press("space")  # pause
        assert screen.playback.clock.paused and screen.model.count == 1
        await pilot.pause(5.5)  # past the moment the next event was due
        assert screen.model.count == 1
        await pilot.press("full_stop")  # one more event
        await wait_for(pilot, lambda: screen.model.count == 2, what="the stepped event")
        assert cursor_line(app) == 2  # the view follows playback
        assert not screen.finished
        await pilot.press("G")  # jump to the end
        await wait_for(pilot, lambda: screen.finished, what="the end")
        assert screen.model.count == 12 and cursor_line(app) == 12
        assert "native_tool_calls = 3" in screen_lines(app)[1]


async def test_fast_playback_reaches_the_end_by_itself():
    app = replay_app(SAMPLES / "clean_pass.jsonl", speed=200)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
        screen = episode(app)
        await wait_for(pilot, lambda: screen.finished, timeout=30, what="the end of playback")
        assert screen.model.count == 12
