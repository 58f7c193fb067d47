"""The live screen on the Daytona backend, driven by Pilot: the real SDK against the local Daytona
server, the stand-in OpenCode (these tests are about the screen), the replay model. Stages come in the remote order, every stage message
(retries included) stays readable in the stage log, retries pop up over the timeline, and a
SIGTERM to the app stops, saves and deletes like `q` does."""

from __future__ import annotations

import os
import signal

import pytest
from textual.widgets import DataTable, Input, Log, Select

from smoldata_tui.sandbox.daytona import DaytonaSettings
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.episode import EpisodeScreen

from .conftest import SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_episode_local import _sleeping_recording
from .test_ui_live import back_to_stages, live_screen, wait_for



def daytona_spec(recording, save_dir, timeout=300) -> EpisodeSpec:
    # --timeout bounds the whole episode, and the capture proxy starts inside the sandbox (openenv's
    # import and the probe there): under load that alone can take a minute or more.
    return EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"),
                       endpoint=open_endpoint(model=f"replay:{recording}"), backend="daytona", timeout_s=timeout,
                       save_dir=save_dir, daytona=DaytonaSettings(keepalive_s=0.5, retry_budget_s=30))  # fmt: skip


def stage_log(app) -> str:
    return "\n".join(live_screen(app).query_one("#stage-log", Log).lines)


async def test_a_daytona_run_shows_remote_stages_retries_and_its_grade(tmp_path, local_daytona):
    app = LiveApp(daytona_spec(SAMPLES / "clean_pass.jsonl", tmp_path / "runs"))
    toasts: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (toasts.append(str(message)), notify(message, **kw))[1]  # toasts expire
    build = ["Step 1/2 : FROM docker.io/savatar101/env-data-agent-train:base", "Step 2/2 : RUN true",
             "Successfully built \x1b[31mabc123"]  # fmt: skip
    local_daytona.build_image_on_create(1.5, build)  # the image's first use: Daytona builds it
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 400)  # the capture proxy imports openenv first
        local_daytona.fail_next(1, 503, path_contains="process/execute")  # while the timeline is on top
        await wait_for(pilot, lambda: not live_screen(app).running, 90)
        result = live_screen(app).result
        assert result.status == "finished" and result.grade.env_reward == 1.0
        assert any("server error (503)" in toast for toast in toasts), toasts
        await back_to_stages(pilot, app)
        table = app.screen.query_one(DataTable)
        rows = [(str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1])) for i in range(table.row_count)]
        assert rows == [(name, "done") for name in ("create sandbox", "install OpenCode", "capture proxy", "stage task",
                                                       "agent running", "recover calls", "grading")]  # fmt: skip
        # The capture level, once the probe (from inside the sandbox) has settled it.
        assert "capture tokens (trainable)" in str(app.screen.query_one("#live-header").render())
        log = stage_log(app)
        build_lines = [line.split("create sandbox: ", 1)[1] for line in log.splitlines() if "create sandbox: build:" in line]
        assert build_lines == ["build: Step 1/2 : FROM docker.io/savatar101/env-data-agent-train:base",
                               "build: Step 2/2 : RUN true", "build: Successfully built ␛[31mabc123"]  # fmt: skip
        assert "from image docker.io/savatar101/env-data-agent-train:base" in log
        assert "nothing to install" in log and "Daytona server error (503)" in log and "env_reward = 1" in log
        assert "capture proxy: starting openenv's capture proxy inside the sandbox" in log
        assert local_daytona.sandbox_ids() == []
        await pilot.press("q")


async def test_sigterm_during_a_daytona_run_saves_and_deletes_before_exiting(tmp_path, local_daytona, monkeypatch):
    from smoldata_tui.ui.apps import live as live_app
    ended_process = []  # the exit watchdog must stand down once Textual has returned: this process goes on
    monkeypatch.setattr(live_app, "EXIT_GRACE_S", 0.5)
    monkeypatch.setattr(live_app.os, "_exit", ended_process.append)
    app = LiveApp(daytona_spec(_sleeping_recording(tmp_path), tmp_path / "runs"))
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen), 240)  # the capture proxy imports openenv first
        await pilot.pause(2)
        assert len(local_daytona.sandbox_ids()) == 1
        screen = live_screen(app)
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the app: without its handler pytest would die
        await wait_for(pilot, lambda: not screen.running, 60)
        await wait_for(pilot, lambda: app._exit_renderables is not None or not app.screen_stack or app.return_code is not None, 10)
    assert screen.result.status == "cancelled"
    assert local_daytona.sandbox_ids() == []
    app._exit_watchdog.join(5)
    assert not app._exit_watchdog.is_alive() and ended_process == []


async def test_the_launch_form_offers_daytona_and_says_when_the_key_is_missing(tmp_path, monkeypatch):
    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    monkeypatch.delenv("DAYTONA_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        app.screen.query_one("#backend", Select).value = "daytona"
        app.screen.query_one("#model", Input).value = f"replay:{SAMPLES / 'clean_pass.jsonl'}"
        await pilot.click("#run")
        await pilot.pause(0.2)
        assert isinstance(app.screen, LaunchForm)
        assert "DAYTONA_API_KEY" in str(app.screen.query_one("#launch-error").render())
    assert not (tmp_path / "runs").exists()
