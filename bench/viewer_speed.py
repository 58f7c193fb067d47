"""How fast is the episode viewer (`smoldata-tui replay`) on the check benchmark's big trace?

    python bench/viewer_speed.py [--follow-seconds S] [--rate N]

Uses the trace of bench/check_speed.py (generated once into bench/.data/: at least 150 MB and
150,000 events). Each measurement runs the real app, headless, in a child process of its own:

  load    first screen (the first rows drawn) after the app starts; the whole trace read;
          End pressed once loaded (the cursor on the last event, the screen redrawn);
          End pressed right after the first screen (how long until the true last event);
          the child's peak RSS against the file's size.
  follow  another process appends N events a second (default 1,000) to a fresh trace for S
          seconds while the viewer follows it: how long each write takes to reach the
          timeline (median, 95th percentile, worst), and the longest stall of the UI loop.

Targets (the issue): first screen < 1 s, End < 100 ms, peak RSS < file size, follow without
visible stalls. The numbers are printed, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

SIZE = (160, 45)


# --- the child processes ----------------------------------------------------------------------
async def _wait(pilot, condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        await asyncio.sleep(0.002)


def _render_now(app) -> None:
    """Draw the whole screen, as the compositor would for the terminal (synchronous)."""
    app.screen._compositor.render_full_update().render_segments(app.console)


async def child_load(path: str) -> dict:
    from smoldata_tui.ui.apps.viewer import ReplayApp
    from smoldata_tui.ui.screens.episode import EpisodeScreen

    started = time.perf_counter()
    app = ReplayApp(Path(path))
    app.animation_level = "none"
    result: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        await _wait(pilot, lambda: isinstance(app.screen, EpisodeScreen))
        screen = app.screen
        timeline = screen.timeline
        gaps = _heartbeat(screen)
        await _wait(pilot, lambda: timeline.row_count > 0)
        _render_now(app)
        result["first_screen_s"] = time.perf_counter() - started
        result["first_screen_wall"] = time.time()
        result["first_rows"] = timeline.row_count

        # End straight away, while the trace is still being read: the cursor follows the end.
        pressed = time.perf_counter()
        timeline.action_last()
        await _wait(pilot, lambda: screen.finished and timeline.cursor == timeline.row_count - 1)
        result["end_while_loading_s"] = time.perf_counter() - pressed
        result["loaded_s"] = time.perf_counter() - started
        result["events"] = screen.model.count
        result["load_max_stall_s"] = max(gaps, default=0.0)

        # End once everything is loaded: from the top, the key's work plus a full redraw.
        timeline.action_first()
        await pilot.pause()
        timings = []
        for _ in range(5):
            timeline.action_first()
            _render_now(app)
            pressed = time.perf_counter()
            timeline.action_last()
            _render_now(app)
            timings.append(time.perf_counter() - pressed)
        result["end_s"] = min(timings)
        result["end_worst_s"] = max(timings)
        assert timeline.cursor == timeline.row_count - 1
        # The same through the keyboard, as Pilot delivers it (includes Pilot's settling wait).
        await pilot.press("home")
        pressed = time.perf_counter()
        await pilot.press("end")
        result["end_key_via_pilot_s"] = time.perf_counter() - pressed

        # Search the whole file for a word that is on a quarter of the lines.
        pressed = time.perf_counter()
        screen.search.start("Tromsø")
        await _wait(pilot, lambda: not screen.search.running)
        result["search_s"] = time.perf_counter() - pressed
        result["search_matches"] = len(screen.search.matches)

        # The conversation tab on the whole trace: open it at the last event, walk it, jump to the top.
        from smoldata_tui.ui.widgets.conversation import ConversationView

        pressed = time.perf_counter()
        screen.show_tab("conversation")
        _render_now(app)
        result["conversation_open_s"] = time.perf_counter() - pressed
        view = screen.query_one(ConversationView)
        steps = []
        for _ in range(20):
            pressed = time.perf_counter()
            view.action_previous_item()
            _render_now(app)
            steps.append(time.perf_counter() - pressed)
        result["conversation_step_s"] = sorted(steps)[len(steps) // 2]
        result["conversation_step_worst_s"] = max(steps)
        pressed = time.perf_counter()
        timeline.action_first()
        await _wait(pilot, lambda: view.selected_event is not None and view.selected_event <= 1)
        _render_now(app)
        result["conversation_jump_s"] = time.perf_counter() - pressed
        assert view.selected_event is not None and view.selected_event <= 1
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def _heartbeat(screen) -> list[float]:
    """A 10 ms timer on the UI loop; the gaps between its ticks are how long the UI was stuck."""
    gaps: list[float] = []
    last = time.monotonic()

    def tick() -> None:
        nonlocal last
        now = time.monotonic()
        gaps.append(now - last)
        last = now

    screen.set_interval(0.01, tick)
    return gaps


async def child_follow(path: str, seconds: float) -> dict:
    from smoldata_tui.ui.apps.viewer import ReplayApp
    from smoldata_tui.ui.screens.episode import EpisodeScreen

    app = ReplayApp(Path(path), follow=True)
    app.animation_level = "none"
    seen: list[tuple[int, float]] = []  # (event count, monotonic time it reached the timeline)
    async with app.run_test(size=SIZE) as pilot:
        await _wait(pilot, lambda: isinstance(app.screen, EpisodeScreen))
        screen = app.screen
        gaps = _heartbeat(screen)
        print("ready", flush=True)
        deadline = time.monotonic() + seconds + 3
        count = 0
        while time.monotonic() < deadline:
            if screen.model.count != count:
                count = screen.model.count
                seen.append((count, time.monotonic()))
            await asyncio.sleep(0.002)
    return {"seen": seen, "max_gap_s": max(gaps[5:], default=0.0), "gaps_over_50ms": sum(g > 0.05 for g in gaps[5:])}


def writer(path: str, rate: int, seconds: float) -> None:
    """Append ``rate`` events a second (in 50 ms batches) and print when each batch landed."""
    import random

    from smoldata_tui.trace.build import TraceBuilder
    from smoldata_tui.trace.build_episode import realistic_episode

    builder = TraceBuilder()
    realistic_episode(builder, steps=max(4, int(rate * seconds / 3)), rng=random.Random(1), output_bytes=1500)
    lines = builder.dumps().splitlines(keepends=True)
    batch = max(1, rate // 20)
    written = 0
    marks = []
    start = time.monotonic()
    with open(path, "ab", buffering=0) as out:
        while written < len(lines) and time.monotonic() - start < seconds:
            due = start + written / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            chunk = lines[written : written + batch]
            out.write(b"".join(chunk))
            written += len(chunk)
            marks.append((written, time.monotonic()))
    print(json.dumps(marks))


# --- the parent -------------------------------------------------------------------------------
def run_child(*argv: str) -> dict:
    output = subprocess.run(
        [sys.executable, __file__, *argv], capture_output=True, text=True, check=True, cwd=HERE.parent
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


def follow_benchmark(rate: int, seconds: float) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "live.jsonl"
        trace.write_bytes(b"")
        viewer = subprocess.Popen(
            [sys.executable, __file__, "--child", "follow", str(trace), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=HERE.parent,
        )
        assert viewer.stdout is not None
        assert viewer.stdout.readline().strip() == "ready"
        written = subprocess.run(
            [sys.executable, __file__, "--child", "write", str(trace), str(rate), str(seconds)],
            capture_output=True,
            text=True,
            check=True,
            cwd=HERE.parent,
        )
        marks = json.loads(written.stdout)
        result = json.loads(viewer.stdout.read().strip().splitlines()[-1])
        viewer.wait()
    seen = result["seen"]
    latencies = []
    position = 0
    for count, at in marks:  # for each batch: when did the timeline first hold it?
        while position < len(seen) and seen[position][0] < count:
            position += 1
        if position == len(seen):
            break
        latencies.append(seen[position][1] - at)
    latencies.sort()
    events = marks[-1][0] if marks else 0
    return {
        "events": events,
        "rate": events / seconds,
        "median_ms": 1000 * latencies[len(latencies) // 2] if latencies else None,
        "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)] if latencies else None,
        "worst_ms": 1000 * latencies[-1] if latencies else None,
        "missed": len(marks) - len(latencies),
        "max_ui_stall_ms": 1000 * result["max_gap_s"],
        "ui_stalls_over_50ms": result["gaps_over_50ms"],
    }


def row(label: str, value: float, unit: str, note: str = "", decimals: int = 0) -> None:
    print(f"  {label:<22} {value:8.{decimals}f} {unit}   {note}".rstrip())


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        mode, *rest = sys.argv[2:]
        if mode == "load":
            print(json.dumps(asyncio.run(child_load(rest[0]))))
        elif mode == "follow":
            print(json.dumps(asyncio.run(child_follow(rest[0], float(rest[1])))))
        elif mode == "write":
            writer(rest[0], int(rest[1]), float(rest[2]))
        return 0

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--follow-seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=1000, help="events per second appended in follow mode")
    parser.add_argument("--trace", help="another trace to load instead of the generated one")
    args = parser.parse_args()

    if args.trace:
        trace = Path(args.trace)
    else:
        from _common import big_trace

        trace = big_trace()
    size_mb = trace.stat().st_size / 1024 / 1024
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    spawned = time.time()
    load = run_child("--child", "load", str(trace))
    print(f"trace: {trace.name}, {size_mb:,.0f} MB, {load['events']:,} events")
    row(
        "first screen",
        load["first_screen_s"] * 1000,
        "ms",
        f"from the app's start ({load['first_rows']:,} rows ready)   target < 1000 ms",
    )
    row("", (load["first_screen_wall"] - spawned) * 1000, "ms", "from the process's start (imports included)")
    row("whole trace read", load["loaded_s"] * 1000, "ms")
    row(
        "End (loaded)",
        load["end_s"] * 1000,
        "ms",
        f"worst of 5: {load['end_worst_s'] * 1000:.1f} ms   target < 100 ms",
        1,
    )
    row("End key through Pilot", load["end_key_via_pilot_s"] * 1000, "ms", "includes Pilot's wait for idle", 1)
    row("End while loading", load["end_while_loading_s"] * 1000, "ms", "until the cursor sat on the true last event")
    row("UI while loading", load["load_max_stall_s"] * 1000, "ms", "longest stall of the UI loop (10 ms heartbeat)")
    row("search (whole file)", load["search_s"] * 1000, "ms", f"{load['search_matches']:,} events hold 'Tromsø'")
    row("conversation tab", load["conversation_open_s"] * 1000, "ms", "opened on the last event, drawn", 1)
    row("conversation k", load["conversation_step_s"] * 1000, "ms",
        f"median of 20, worst {load['conversation_step_worst_s'] * 1000:.1f} ms (End above: the timeline's own)", 1)
    row("timeline Home", load["conversation_jump_s"] * 1000, "ms", "the conversation follows to the top", 1)
    row("peak RSS", load["peak_rss_mb"], "MB", f"file {size_mb:,.0f} MB   target below the file's size")

    follow = follow_benchmark(args.rate, args.follow_seconds)
    print(
        f"follow: {follow['events']:,} events appended by another process in {args.follow_seconds:g} s "
        f"({follow['rate']:,.0f}/s)"
    )
    print(
        f"  write → timeline       median {follow['median_ms']:.0f} ms, p95 {follow['p95_ms']:.0f} ms, "
        f"worst {follow['worst_ms']:.0f} ms, batches missed {follow['missed']}"
    )
    print(
        f"  UI loop                longest stall {follow['max_ui_stall_ms']:.0f} ms, "
        f"stalls over 50 ms: {follow['ui_stalls_over_50ms']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
