"""A Daytona sandbox is shaped as the environment's own Daytona backend shapes it: its image with
1 CPU, 4 GiB memory, 5 GiB disk, or the snapshot in ``$DATA_AGENT_DAYTONA_SNAPSHOT``;
``--daytona-cpu/-memory/-disk/-target`` change that for a run. What the sandbox got, as the server
reported it, is saved in ``run.meta.json`` and shown in the viewer's episode tab."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from smoldata_tui.sandbox.daytona import DEFAULT_IMAGE, DaytonaSandboxBackend, DaytonaSettings

from .conftest import ROOT, SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_ui_helpers import loaded, replay_app, screen_lines

FAST = dict(keepalive_s=0.5, retry_budget_s=30.0, create_timeout_s=60.0)
SNAPSHOT_VARIABLES = ("DATA_AGENT_DAYTONA_SNAPSHOT", "DAYTONA_SNAPSHOT")


@pytest.fixture
def no_snapshot_variables(monkeypatch):
    for name in SNAPSHOT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def created(local_daytona, settings: DaytonaSettings) -> tuple[dict, dict]:
    """(the body of the create request the server received, what the handle says the sandbox got)."""
    handle = DaytonaSandboxBackend(settings).create(timeout_s=60, metadata={"run": "resources"})
    try:
        return local_daytona.create_params(handle.sandbox_id), handle.resources
    finally:
        handle.kill()


def test_by_default_the_sandbox_has_the_environments_resources(local_daytona, no_snapshot_variables):
    params, got = created(local_daytona, DaytonaSettings.from_environment(**FAST))
    assert (params["cpu"], params["memory"], params["disk"]) == (1, 4, 5)
    assert "FROM " + DEFAULT_IMAGE in params["buildInfo"]["dockerfileContent"]
    assert got == {"cpu": 1, "memory_gib": 4, "disk_gib": 5, "target": "local", "image": DEFAULT_IMAGE}


def test_the_environments_snapshot_variable_is_used_and_the_flag_comes_first(local_daytona, monkeypatch):
    monkeypatch.setenv("DAYTONA_SNAPSHOT", "ours")
    monkeypatch.setenv("DATA_AGENT_DAYTONA_SNAPSHOT", "trainings")
    params, got = created(local_daytona, DaytonaSettings.from_environment(**FAST))
    assert params["snapshot"] == "trainings" and "cpu" not in params  # a snapshot brings its own resources
    assert got["snapshot"] == "trainings" and "image" not in got
    assert DaytonaSettings.from_environment(snapshot="flag").snapshot == "flag"
    monkeypatch.delenv("DATA_AGENT_DAYTONA_SNAPSHOT")
    assert DaytonaSettings.from_environment().snapshot == "ours"


@pytest.mark.usefixtures("no_snapshot_variables")
async def test_the_flags_shape_the_sandbox_and_the_episode_tab_shows_what_it_got(tmp_path, local_daytona):
    command = [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--backend", "daytona",
               "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--save", str(tmp_path / "runs"), "--headless",
               "--daytona-cpu", "2", "--daytona-memory", "3", "--daytona-disk", "7", "--daytona-target", "eu-test"]  # fmt: skip
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    (sandbox_id,) = {path.split("/")[3] for _m, path, _s in local_daytona.requests if path.startswith("/api/sandbox/")}
    params = local_daytona.create_params(sandbox_id)
    assert (params["cpu"], params["memory"], params["disk"], params["target"]) == (2, 3, 7, "eu-test")
    (run_dir,) = (tmp_path / "runs").iterdir()
    saved = json.loads((run_dir / "run.meta.json").read_text())["sandbox"]["resources"]
    assert saved == {"cpu": 2, "memory_gib": 3, "disk_gib": 7, "target": "eu-test", "image": DEFAULT_IMAGE}

    app = replay_app(run_dir / "run.jsonl")
    async with app.run_test(size=(160, 80)) as pilot:
        await loaded(pilot)
        await pilot.press("4")  # the episode tab
        await pilot.pause(0.3)
        shown = [" ".join(line.split()) for line in screen_lines(app)]
    for line in ("Sandbox", "cpu 2", "memory 3 GiB", "disk 7 GiB", "target eu-test"):
        assert any(line in row for row in shown), line + "\n" + "\n".join(shown)
    # The image's name wraps below its label; it is shown as the source asked for and as what the sandbox got.
    assert sum("docker.io/savatar101/env-data-agent-train" in row for row in shown) == 2, "\n".join(shown)
    assert local_daytona.sandbox_ids() == []
