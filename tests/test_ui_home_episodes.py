"""The home screen's line about the saved episodes: how many, how many interrupted and the command
that tidies after those. Real saved episode folders (a trace, its ``run.meta.json``) and the real
app via Pilot."""

from __future__ import annotations

import subprocess
from pathlib import Path

from smoldata_tui.sandbox.processes import start_time
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.store.owner import owner_record
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.home import HomeScreen

from .conftest import ROOT
from .test_ui_live import wait_for

CLEAN = ROOT / "sample_traces" / "clean_pass.jsonl"


def _dead_owner() -> dict:
    """The owner record of a process that has ended."""
    child = subprocess.Popen(["sleep", "30"])
    record = {**owner_record(), "pid": child.pid, "start_time": start_time(child.pid)}
    child.kill()
    child.wait()
    return record


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
