"""Every way of stopping a live TUI run stops the agent and releases the sandbox, and the saved
metadata says what happened. The real app runs in a real pseudo-terminal (keys typed, signals
sent, the terminal closed), with the stand-in OpenCode (these tests are about our exits, not
OpenCode's) in a real bubblewrap sandbox, driven by the replay model into a long bash ``sleep``."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from .live_pty import TerminalApp, still_alive
from .test_episode_local import _sleeping_recording, processes_matching, sandbox_dirs, standin_sandboxes  # noqa: F401

AGENT_START_S = 240  # a loaded CI machine can take minutes to start OpenCode
STOP_S = 120  # TERM grace, `opencode export`, removing the sandbox: seconds, but a loaded machine is slow


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.3)
    return False


WAYS = {
    # name: (what the user does, what run.meta.json's stop_reason must say, the exit status: as
    # headless, 1 for an episode that did not end on its own and 130 after SIGINT)
    "q": (lambda app: (app.type(b"q"), time.sleep(1), app.type(b"q")), "q", 1),  # the timeline's q goes back first
    "ctrl+c on the timeline, confirmed": (None, "Ctrl+C", 1),
    "ctrl+q": (lambda app: app.type(b"\x11"), "Ctrl+Q", 1),
    "SIGINT": (lambda app: app.send_signal(signal.SIGINT), "SIGINT", 130),
    "SIGTERM": (lambda app: app.send_signal(signal.SIGTERM), "SIGTERM", 1),
    "terminal closed": (lambda app: app.close_terminal(), "SIGHUP", 1),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_every_way_out_of_a_live_run_stops_the_agent_and_says_why(tmp_path, standin_sandboxes, way):
    marker = f"slow-agent-{os.getpid()}-{abs(hash(way))}"
    recording = _sleeping_recording(tmp_path, marker)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48"}
    runs = tmp_path / "runs"
    app = TerminalApp(["run", "--task", "sales-top-region", "--model", f"replay:{recording}", "--save", str(runs)],
                      env=env, cwd=tmp_path)  # fmt: skip
    try:
        assert _wait_for(lambda: processes_matching(marker), AGENT_START_S), app.screen_text[-2000:]
        time.sleep(1.0)  # the timeline has opened over the stages: keys go to it
        running = app.snapshot_processes()
        assert running, "the sandbox's processes should be below the app"
        act, reason, status = WAYS[way]
        if act is None:  # Ctrl+C on the live timeline asks first (not Textual's "press ctrl+q")
            seen = len(app.output)
            app.type(b"\x03")
            assert _wait_for(lambda: b"The agent is stopped" in app.output[seen:], 30), app.screen_text[-2000:]
            app.type(b"y")
            # Cancelling keeps the app open on what was received; the agent and sandbox are gone.
            assert _wait_for(lambda: not still_alive(running), STOP_S), f"left running: {still_alive(running)}"
            assert app.returncode is None and app.wait(0.5) is None
            for _ in range(3):  # q leaves the timeline, then the app
                app.type(b"q")
                if app.wait(10) is not None:
                    break
        else:
            act(app)
        assert app.wait(STOP_S) is not None, f"still running {STOP_S} s after {way}"
        assert app.returncode == status, (way, app.returncode)
        assert _wait_for(lambda: not still_alive(running), 10), f"left running: {still_alive(running)}"
        assert processes_matching(marker) == []
        assert sandbox_dirs(standin_sandboxes) == []
        [meta_path] = runs.glob("*/run.meta.json")
        metadata = json.loads(meta_path.read_text())
        assert metadata["status"] == "cancelled", metadata
        assert reason in metadata["stop_reason"], metadata
        assert metadata["owner"]["pid"] == app.pid
    finally:
        app.kill()
