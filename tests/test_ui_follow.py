"""--follow: a file another process is still writing; new events appear, the view behaves."""

from __future__ import annotations

import subprocess
import sys

from textual import events

from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata

from .test_ui_helpers import SIZE, cursor_line, episode, replay_app, screen_lines, small_episode, timeline, wait_for

APPEND = "import sys; f = open(sys.argv[1], 'ab'); f.write(sys.stdin.buffer.read()); f.close()"


def append_from_another_process(path, data: bytes) -> None:
    subprocess.run([sys.executable, "-c", APPEND, str(path)], input=data, check=True)


def trace_lines() -> list[bytes]:
    return small_episode().dumps().splitlines(keepends=True)


async def open_following(pilot, count: int):
    await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
    screen = episode(pilot.app)
    await wait_for(
        pilot, lambda: screen.model.count == count, what=lambda: f"{count} events, have {screen.model.count}"
    )
    return screen


async def test_appended_events_appear_and_the_end_sticks(tmp_path):
    # How soon they appear is measured in bench/viewer_speed.py (follow), not here.
    lines = trace_lines()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:4]))
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await open_following(pilot, 4)
        assert cursor_line(app) == 4  # following starts at the end
        assert "running" in screen_lines(app)[0]
        append_from_another_process(path, b"".join(lines[4:8]))
        await wait_for(pilot, lambda: screen.model.count == 8, timeout=20, what="the appended events")
        await pilot.pause()
        assert cursor_line(app) == 8  # the cursor was at the end: it stays at the end
        view = timeline(app)
        assert view.scroll_offset.y == view.max_scroll_y
        assert "if the trace ended here" in screen_lines(app)[1]  # the verdict is not final yet


async def test_mouse_wheel_scrolls_and_stops_following(tmp_path):
    lines = trace_lines()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:4]) * 12)  # 48 events: more than a screenful
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=(140, 30)) as pilot:
        screen = await open_following(pilot, 48)
        view = timeline(app)
        bottom = view.scroll_offset.y
        assert bottom > 0 and view.tail
        for _ in range(3):
            view.post_message(events.MouseScrollUp(view, 5, 5, 0, 0, 0, False, False, False, screen_x=5, screen_y=8))
        await pilot.pause()
        assert view.scroll_offset.y < bottom  # the view scrolled, the cursor stayed
        assert cursor_line(app) == 48
        assert not view.tail  # reading back up: new events no longer pull the view down
        append_from_another_process(path, b"".join(lines[4:6]))
        await wait_for(pilot, lambda: screen.model.count == 50, timeout=20, what="the appended events")
        await pilot.pause()
        assert cursor_line(app) == 48 and view.pending == 2


async def test_cursor_away_from_the_end_stays_and_new_events_are_counted(tmp_path):
    lines = trace_lines()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:4]))
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await open_following(pilot, 4)
        await pilot.press("k", "k")
        assert cursor_line(app) == 2
        append_from_another_process(path, b"".join(lines[4:7]))
        await wait_for(pilot, lambda: screen.model.count == 7, timeout=20, what="the appended events")
        await pilot.pause()
        assert cursor_line(app) == 2
        assert timeline(app).pending == 3
        assert any("3 new events" in line for line in screen_lines(app))
        await pilot.press("end")
        assert cursor_line(app) == 7
        assert timeline(app).pending == 0
        assert not any("new events" in line for line in screen_lines(app))


async def test_half_written_line_waits_for_its_newline(tmp_path):
    lines = trace_lines()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:2]))
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await open_following(pilot, 2)
        append_from_another_process(path, lines[2][:30])
        await pilot.pause(0.3)
        assert screen.model.count == 2
        assert not any(f.kind == "malformed_line" for f in screen.model.findings[: screen.model.finding_count])
        append_from_another_process(path, lines[2][30:])
        await wait_for(pilot, lambda: screen.model.count == 3, timeout=20, what="the completed line")
        assert screen.model.record(2).kind == "tool_use"


async def test_truncated_file_is_read_again_with_a_notice(tmp_path):
    lines = trace_lines()
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(lines[:8]))
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        screen = await open_following(pilot, 8)
        path.write_bytes(b"".join(lines[:3]))  # a new run reusing the file
        await wait_for(pilot, lambda: screen.generation == 2 and screen.model.count == 3, timeout=20, what="the reset")
        assert "truncated" in screen.notice
        assert any("truncated" in line for line in screen_lines(app))


async def test_waits_for_the_file_then_finishes_when_the_episode_says_so(tmp_path):
    lines = trace_lines()
    path = tmp_path / "later.jsonl"
    app = replay_app(path, follow=True)
    async with app.run_test(notifications=True, size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
        screen = episode(app)
        await wait_for(pilot, lambda: "waiting for later.jsonl" in screen.notice, what="the waiting notice")
        path.write_bytes(b"".join(lines))
        await wait_for(pilot, lambda: screen.model.count == 12, timeout=30, what="the events")
        assert not screen.notice
        assert not screen.finished  # still following: the run may go on
        save_metadata(metadata_path_for(path), EpisodeMetadata(task="sales", status="finished", exit_code=0))
        await wait_for(pilot, lambda: screen.finished, timeout=30, what="the episode to finish")
        await pilot.pause()
        assert "finished" in screen_lines(app)[0] and "sales" in screen_lines(app)[0]
