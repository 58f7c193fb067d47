"""Snapshots of the main screens on sample traces (fixed terminal sizes; every time shown is
relative to the trace's first event, so the pictures do not depend on when the test runs).

Update after an intended change: ``python3 -m pytest tests/test_ui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from textual.widgets import Input

from smoldata_tui.store.metadata import EpisodeMetadata, Grade, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.build_episode import realistic_episode
from smoldata_tui.ui.screens.fleet import FleetScreen

from .conftest import SAMPLES
from .test_ui_helpers import loaded, replay_app, searched, small_episode, wait_for, write_trace
from .test_ui_fleet import folder_of_traces
from .test_ui_safety import evil_trace

WIDE = (130, 34)


async def wait_loaded(pilot) -> None:
    await loaded(pilot)


def test_episode_with_a_duplicate_call(snap_compare):
    app = replay_app(SAMPLES / "duplicate_call_id_reused.jsonl")
    assert snap_compare(app, press=["n"], terminal_size=WIDE, run_before=wait_loaded)


def test_findings_tab_of_a_killed_run(snap_compare):
    app = replay_app(SAMPLES / "unfinished_call.jsonl")
    assert snap_compare(app, press=["2"], terminal_size=WIDE, run_before=wait_loaded)


def test_stats_tab_of_a_longer_episode(snap_compare, tmp_path):
    builder = TraceBuilder()
    realistic_episode(builder, steps=14, rng=random.Random(5), output_bytes=400)
    app = replay_app(write_trace(tmp_path / "long.jsonl", builder))
    assert snap_compare(app, press=["3"], terminal_size=WIDE, run_before=wait_loaded)


def test_episode_tab_with_metadata_and_grade(snap_compare, tmp_path):
    trace = tmp_path / "graded.jsonl"
    shutil.copy(SAMPLES / "clean_pass.jsonl", trace)
    save_metadata(
        metadata_path_for(trace),
        EpisodeMetadata(
            task="sales-top-region",
            backend="daytona",
            model="openai/gpt-4.1-mini",
            harness="opencode",
            opencode_version="1.18.31",
            started_at="2026-01-01T00:00:00Z",
            finished_at="2026-01-01T00:00:09Z",
            status="finished",
            exit_code=0,
            grade=Grade(env_reward=1.0, correctness=1, grader_output='{"correctness": 1, "expected": "West"}'),
            timings={"create_sandbox": 2.5, "agent": 5.8, "grade": 0.4},
            config={
                "provider": "openai_compatible",
                "api_key": "sk-aaaaaaaaaaaaaaaaaaaaaaaa",
                "request_timeout_ms": 60000,
            },
        ),
    )
    app = replay_app(trace)
    assert snap_compare(app, press=["4"], terminal_size=WIDE, run_before=wait_loaded)


def test_search_with_matches_and_a_filter(snap_compare, tmp_path):
    b = small_episode()
    b.step_start()
    b.text('Then I said "pandas is missing".')
    b.step_finish("stop")
    app = replay_app(write_trace(tmp_path / "run.jsonl", b))

    async def search(pilot) -> None:
        screen = await loaded(pilot)
        await pilot.press("u")  # (no filter yet: harmless)
        await pilot.press("slash", *"pandas")
        await wait_for(pilot, lambda: searched(screen, "pandas"), what="search")
        await pilot.press("enter")
        pilot.app.screen.query_one(Input).cursor_blink = False

    assert snap_compare(app, press=[], terminal_size=WIDE, run_before=search)


def test_findings_only_filter(snap_compare, tmp_path):
    app = replay_app(write_trace(tmp_path / "run.jsonl", small_episode()))
    assert snap_compare(app, press=["e"], terminal_size=WIDE, run_before=wait_loaded)


def test_narrow_terminal_with_the_detail_below(snap_compare, tmp_path):
    app = replay_app(write_trace(tmp_path / "run.jsonl", small_episode()))
    assert snap_compare(app, press=["j", "j", "enter"], terminal_size=(90, 34), run_before=wait_loaded)


def test_help_screen(snap_compare):
    app = replay_app(SAMPLES / "clean_pass.jsonl")
    assert snap_compare(app, press=["question_mark"], terminal_size=(110, 60), run_before=wait_loaded)


def test_escapes_and_markup_are_inert(snap_compare, tmp_path):
    app = replay_app(write_trace(tmp_path / "evil.jsonl", evil_trace()))
    assert snap_compare(app, press=["j", "j"], terminal_size=WIDE, run_before=wait_loaded)


def test_fleet_table(snap_compare, tmp_path, monkeypatch):
    folder_of_traces(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    app = replay_app(Path("episodes"))

    async def every_trace_read(pilot) -> None:
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetScreen), what="the fleet table")
        screen = pilot.app.screen
        await wait_for(pilot, lambda: screen.last_refresh is not None and len(screen.table.rows) == 4,
                       timeout=60, what="every trace read")  # fmt: skip
        await pilot.pause(0.2)

    assert snap_compare(app, press=[], terminal_size=(200, 16), run_before=every_trace_read)
