"""The TUI exits as the CLI does: 3 after an internal error (not 0), 130 after SIGINT (as headless),
0 on a plain quit. The real app in a real pseudo-terminal (tests/live_pty.py)."""

from __future__ import annotations

import os
import shutil
import signal
import time

from .conftest import SAMPLES
from .live_pty import TerminalApp

START_S = 60


def terminal(tmp_path, args, **env_extra) -> TerminalApp:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40",
           "XDG_CACHE_HOME": str(tmp_path / "cache"), **env_extra}  # fmt: skip
    return TerminalApp(args, env=env, cwd=tmp_path)


def wait_for_text(app: TerminalApp, text: bytes, timeout: float = START_S) -> None:
    deadline = time.monotonic() + timeout
    while text not in app.output:
        assert time.monotonic() < deadline, f"{text!r} never shown: {app.output[-2000:]!r}"
        assert app.returncode is None and app.wait(0) is None, f"exited {app.returncode}: {app.output[-2000:]!r}"
        time.sleep(0.2)


def fleet_folder(tmp_path):
    folder = tmp_path / "episodes"
    folder.mkdir()
    for name in ("clean_pass", "missing_call_id"):
        shutil.copy(SAMPLES / f"{name}.jsonl", folder / f"{name}.jsonl")
    return folder


def a_bug_in_sorting(tmp_path) -> dict[str, str]:
    """A fault put into the real app: sorting the fleet table raises, as a bug would."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from smoldata_tui.ui.screens.fleet import FleetScreen\n"
        "def sort_by(self, *args, **kwargs):\n"
        "    raise RuntimeError('a bug in sorting')\n"
        "FleetScreen.sort_by = sort_by\n"
    )
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))}


def test_the_viewer_exits_3_after_an_internal_error(tmp_path):
    folder = fleet_folder(tmp_path)
    app = terminal(tmp_path, ["replay", str(folder)], **a_bug_in_sorting(tmp_path))
    try:
        wait_for_text(app, b"2 episodes")
        app.type(b"s")
        assert app.wait(START_S) == 3, app.output[-3000:]
        assert b"a bug in sorting" in app.output  # Textual showed what went wrong
    finally:
        app.kill()


def test_the_viewer_exits_0_on_a_plain_quit(tmp_path):
    app = terminal(tmp_path, ["replay", str(fleet_folder(tmp_path))])
    try:
        wait_for_text(app, b"2 episodes")
        app.type(b"q")
        assert app.wait(START_S) == 0, app.output[-3000:]
    finally:
        app.kill()


def test_the_home_screen_exits_130_after_sigint_and_0_on_q(tmp_path):
    for act, status in ((lambda app: app.send_signal(signal.SIGINT), 130), (lambda app: app.type(b"q"), 0)):
        app = terminal(tmp_path, [])
        try:
            wait_for_text(app, b"saved episodes")
            act(app)
            assert app.wait(START_S) == status, app.output[-3000:]
        finally:
            app.kill()
