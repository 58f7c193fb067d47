"""``smoldata-tui replay``: the Textual app and its command-line entry point."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from textual.app import App

from smoldata_tui.ui.apps.navigation import Navigation
from smoldata_tui.ui.screens.palette import ScreenCommands
from smoldata_tui.ui.exit_status import has_terminal, tui_exit_status
from smoldata_tui.ui.gc_tuning import QuietCollector
from smoldata_tui.ui.theme_text import ReadableTheme


class ReplayApp(ReadableTheme, Navigation, App[None]):
    """Opens the episode screen on a trace file, or the fleet table on a folder of episodes."""

    CSS_PATH = "app.tcss"
    TITLE = "smoldata-tui"
    COMMANDS = App.COMMANDS | {ScreenCommands}

    def __init__(self, target: Path, *, follow: bool = False, speed: float | None = None) -> None:
        super().__init__()
        self.target = Path(target)
        self.follow = follow
        self.speed = speed
        self.collector = QuietCollector()

    def on_mount(self) -> None:
        self.collector.start()  # see ui/gc_tuning.py
        if self.target.is_dir():
            self.open_fleet(self.target, standalone=True, follow=self.follow, speed=self.speed)
        else:
            self.open_episode(self.target, follow=self.follow, speed=self.speed)

    def on_unmount(self) -> None:
        self.collector.stop()


class ReplayError(Exception):
    """A path or option the viewer cannot use: one line for the user, exit status 2."""


def check_target(path: Path, *, follow: bool, speed: float | None) -> None:
    if speed is not None and not (speed > 0 and speed != float("inf")):
        raise ReplayError(f"--speed must be a positive number, not {speed:g}")
    if follow and speed is not None:
        raise ReplayError("--follow and --speed cannot be combined: follow shows a live file as it grows")
    try:
        info = path.stat()
    except FileNotFoundError:
        if follow and path.parent.is_dir():
            return  # the live run has not created it yet: the viewer waits for it
        raise ReplayError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise ReplayError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        if not os.access(path, os.R_OK | os.X_OK):
            raise ReplayError(f"{path}: permission denied")
        return
    if not stat.S_ISREG(info.st_mode):
        raise ReplayError(
            f"{path}: not a regular file (pipes and devices cannot be replayed; save the stream to a file)"
        )
    if not os.access(path, os.R_OK):
        raise ReplayError(f"{path}: permission denied")


def run_replay(path: str, *, follow: bool = False, speed: float | None = None) -> int:
    """The ``replay`` subcommand: 0 on a normal quit, 2 when the path cannot be replayed, 3 when the
    app ended on an internal error."""
    target = Path(path)
    try:
        check_target(target, follow=follow, speed=speed)
    except ReplayError as exc:
        print(f"smoldata-tui replay: {exc}", file=sys.stderr)
        return 2
    # Textual draws on stderr and reads keys from stdin: both must be a terminal.
    if not has_terminal():
        print("smoldata-tui replay: needs a terminal; use `smoldata-tui check` for text output", file=sys.stderr)
        return 2
    app = ReplayApp(target, follow=follow, speed=speed)
    app.run()
    return tui_exit_status(app, 0)
