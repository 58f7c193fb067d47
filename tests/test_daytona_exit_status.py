"""`smoldata-tui run`'s exit status follows the episode, headless and in the TUI, on every backend:
0 when the agent finished and its answer was graded, 1 when it timed out or was not graded."""

from __future__ import annotations

import io
import json

import pytest

from smoldata_tui.commands.run import run_headless
from smoldata_tui.ui.apps.live import LiveApp, episode_exit_status

from .conftest import SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_episode_local import _sleeping_recording, standin_sandboxes  # noqa: F401 - a fixture
from .test_ui_daytona import daytona_spec
from .test_ui_live import live_screen, spec_for, wait_for


async def test_the_live_app_exits_0_once_its_episode_was_graded(tmp_path, local_daytona):
    app = LiveApp(daytona_spec(SAMPLES / "clean_pass.jsonl", tmp_path / "runs"))
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: not live_screen(app).running, 120)
        assert live_screen(app).result.grade.env_reward == 1.0
        await pilot.press("q")
    assert app.screen_stack == []  # what `run` sees once the app is gone
    assert episode_exit_status(app) == 0
    assert local_daytona.sandbox_ids() == []


@pytest.mark.parametrize("backend", ["local", "daytona"])
def test_a_headless_run_that_timed_out_exits_1(tmp_path, backend, request):
    if backend == "daytona":
        request.getfixturevalue("local_daytona")
        spec = daytona_spec(_sleeping_recording(tmp_path), tmp_path / "runs", timeout=8)
    else:
        request.getfixturevalue("standin_sandboxes")
        spec = spec_for(_sleeping_recording(tmp_path), tmp_path / "runs", timeout=8)
    out, err = io.StringIO(), io.StringIO()
    assert run_headless(spec, out, err) == 1
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["status"] == "timeout", err.getvalue()
