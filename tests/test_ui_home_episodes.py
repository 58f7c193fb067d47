"""The home screen's line about the saved episodes: how many, how many interrupted and the command
that tidies after those. Real saved episode folders (a trace, its ``run.meta.json``) and the real
app via Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.fleet import FleetScreen
from smoldata_tui.ui.screens.home import HomeScreen

from .conftest import ROOT
from .test_interrupted_runs import _dead_owner
from .test_ui_live import wait_for

CLEAN = ROOT / "sample_traces" / "clean_pass.jsonl"


@pytest.fixture(autouse=True)
def cache_home(tmp_path, monkeypatch):  # the fleet table's cache, not the user's
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def save_episode(folder: Path, *, status: str = "finished", owner: dict | None = None) -> Path:
    """An episode as `run --save` leaves it: ``folder/run.jsonl`` and ``folder/run.meta.json``."""
    folder.mkdir(parents=True)
    trace = folder / "run.jsonl"
    trace.write_bytes(CLEAN.read_bytes())
    save_metadata(folder / "run.meta.json", EpisodeMetadata(task="sales-top-region", status=status, owner=owner or {},
                                                             trace="run.jsonl"))  # fmt: skip
    return trace


def episodes_line(app) -> str:
    return str(app.screen.query_one("#home-episodes").render())


async def test_interrupted_episodes_name_the_command_that_tidies_after_them(tmp_path):
    runs = tmp_path / "runs"
    save_episode(runs / "20260101-000000-sales-top-region")
    save_episode(runs / "20260101-000100-sales-top-region", status="running", owner=_dead_owner())
    app = LiveApp(runs=runs)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await wait_for(pilot, lambda: "2 saved episodes" in episodes_line(app), 10)
        line = episodes_line(app)
        assert "1 interrupted (smoldata-tui local gc tidies their sandboxes)" in line, line


def save_batch(runs: Path, name: str, attempts: int, *, interrupted: int = 0) -> list[Path]:
    """A batch as `run --attempts N --save RUNS` leaves it: ``RUNS/<batch>/<task>-N/run.jsonl`` and
    the batch's own ``batch.json``; its first ``interrupted`` attempts died mid-run."""
    batch = runs / name
    traces = [save_episode(batch / f"sales-top-region-{number}", **(
        {"status": "running", "owner": _dead_owner()} if number <= interrupted else {}))
        for number in range(1, attempts + 1)]  # fmt: skip
    (batch / "batch.json").write_text('{"batch": "%s", "attempts": %d}\n' % (name, attempts))
    return traces


async def test_batch_episodes_are_counted_and_e_opens_them_in_the_fleet_table(tmp_path):
    runs = tmp_path / "runs"
    save_batch(runs, "20260101-000000-batch", 3, interrupted=1)
    save_batch(runs, "20260101-000500-batch", 2)
    save_episode(runs / "20260101-001000-sales-top-region", status="running", owner=_dead_owner())
    app = LiveApp(runs=runs)
    app.animation_level = "none"
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await wait_for(pilot, lambda: not episodes_line(app).startswith("counting"), 10)
        line = episodes_line(app)
        assert line.startswith("6 saved episodes in") and "2 interrupted" in line, line
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 10)
        fleet = app.screen
        await wait_for(pilot, lambda: fleet.last_refresh is not None, 30)
        assert len(fleet.table.rows) == 6  # the fleet lists what home counted


async def test_e_on_a_folder_without_episodes_says_so_and_stays_home(tmp_path):
    runs = tmp_path / "runs"
    (runs / "20260101-000000-batch").mkdir(parents=True)  # a batch that saved nothing yet
    app = LiveApp(runs=runs)
    async with app.run_test(size=(140, 30), notifications=True) as pilot:
        await wait_for(pilot, lambda: "0 saved episodes in" in episodes_line(app), 10)
        await pilot.press("e")
        await wait_for(pilot, lambda: any("no saved episodes in" in n.message for n in app._notifications), 10)
        assert isinstance(app.screen, HomeScreen)
        # one saved since, by another process: e counts again rather than trust the 0
        save_batch(runs, "20260101-000100-batch", 1)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, FleetScreen), 10)

