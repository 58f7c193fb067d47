"""An endpoint that accepts connections and never answers: the capture proxy's probe of it keeps to
the run's ``--timeout`` and a stop signal ends the run at once, and the reason says the endpoint
accepted the connection but did not answer. The real CLI in a subprocess (the live app through
Pilot for Esc then y), a real bubblewrap sandbox (the stand-in OpenCode: the run never gets as far
as the agent), a real socket server."""

from __future__ import annotations

import signal
import socket
import threading
import time

import pytest

from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.ui.apps.live import LiveApp
from smoldata_tui.ui.screens.live import ConfirmCancel

from .test_episode_local import sandbox_dirs
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_headless_exits import Headless
from .test_live_exits import _wait_for
from .test_ui_live import live_screen, wait_for

SIGNAL_STOP_S = 5.0  # a stop during the probe: the run ends, saved and released, within this


@pytest.fixture
def silent_endpoint():
    """``http://127.0.0.1:PORT/v1`` of a server that accepts every connection and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    closing = threading.Event()

    def accept() -> None:
        while not closing.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1", held
    closing.set()
    server.close()
    for connection in held:
        connection.close()


def _run(tmp_path, url: str, timeout_s: int) -> Headless:
    return Headless(tmp_path, "sales-top-region", None,
                    endpoint=("--model", "m", "--base-url", url, "--api-key", "k", "--timeout", str(timeout_s)))


def test_the_probe_of_a_silent_endpoint_keeps_to_the_runs_timeout(tmp_path, standin_sandboxes, silent_endpoint):  # noqa: F811
    url, held = silent_endpoint
    started = time.monotonic()
    run = _run(tmp_path, url, 6)
    status = run.finish(60)
    took = time.monotonic() - started
    assert status == 1, run.stderr
    assert held, "the probe should have connected"
    assert took < 6 + 6, (took, run.stderr)  # the CLI's start and the release besides the 6 s (it took 90 s)
    metadata = run.metadata()
    assert metadata["status"] == "timeout", metadata
    assert "accepted the connection but did not answer within" in metadata["capture"]["failed"], metadata["capture"]
    assert "NOT reachable" not in "".join(run.stderr)
    assert sandbox_dirs(standin_sandboxes) == []


@pytest.mark.parametrize(("signum", "reason", "status"), [(signal.SIGINT, "SIGINT (Ctrl+C)", 130)])
def test_a_stop_signal_during_the_probe_ends_the_run_at_once(tmp_path, standin_sandboxes, silent_endpoint,  # noqa: F811
                                                            signum, reason, status):  # fmt: skip
    url, held = silent_endpoint
    run = _run(tmp_path, url, 120)
    assert _wait_for(lambda: held and run.said("probing"), 60), run.stderr
    run.process.send_signal(signum)
    stopped = time.monotonic()
    assert run.finish(60) == status, run.stderr
    assert time.monotonic() - stopped < SIGNAL_STOP_S, run.stderr  # it took 85 s
    metadata = run.metadata()
    assert metadata["status"] == "cancelled" and metadata["stop_reason"] == reason, metadata
    assert sandbox_dirs(standin_sandboxes) == []


async def test_esc_then_y_during_the_probe_cancels_at_once(tmp_path, standin_sandboxes, silent_endpoint):  # noqa: F811
    url, held = silent_endpoint
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), timeout_s=120, save_dir=tmp_path / "runs",
                       endpoint=open_endpoint(model="m", base_url=url, api_key="k"))  # fmt: skip
    app = LiveApp(spec)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: bool(held), 60)
        await pilot.press("escape")
        assert isinstance(app.screen, ConfirmCancel)
        await pilot.press("y")
        confirmed = time.monotonic()
        await wait_for(pilot, lambda: not live_screen(app).running, 60)
        assert time.monotonic() - confirmed < SIGNAL_STOP_S  # "cancelling: stopping the agent…" stayed 84 s
        assert live_screen(app).result.status == "cancelled"
        assert sandbox_dirs(standin_sandboxes) == []
        await pilot.press("q")
