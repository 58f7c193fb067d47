"""``smoldata-tui run`` without ``--headless``: the live episode in the terminal."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from textual.app import App

from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.ui.commands import EpisodeCommands
from smoldata_tui.ui.gc_tuning import QuietCollector


class LiveApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "smoldata-tui"
    COMMANDS = App.COMMANDS | {EpisodeCommands}

    def __init__(self, spec: EpisodeSpec | None = None, *, tasks_root: Path | None = None,
                 runs: Path = Path("runs")) -> None:  # fmt: skip
        """With a spec: that episode, live. Without: the home screen (task set, saved episodes)."""
        super().__init__()
        self.spec = spec
        self.tasks_root = tasks_root
        self.runs = runs
        self.collector = QuietCollector()
        self.live_screen = None  # the episode's screen: kept, since Textual empties the stack on exit

    def on_mount(self) -> None:
        self.collector.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):  # a closed terminal or `kill`: release, then exit
            loop.add_signal_handler(sig, self.terminate)
        if self.spec is not None:
            from smoldata_tui.ui.screens.live import LiveScreen

            self.live_screen = LiveScreen(self.spec)
            self.push_screen(self.live_screen)
        else:
            from smoldata_tui.ui.screens.home import HomeScreen

            self.push_screen(HomeScreen(self.tasks_root, self.runs))

    def terminate(self) -> None:
        """Quit as `q` does: a running episode is stopped, saved and its sandbox released first."""
        from smoldata_tui.ui.screens.live import LiveScreen

        running = [screen for screen in self.screen_stack if isinstance(screen, LiveScreen) and screen.running]
        if running:
            running[-1].action_quit_episode()
        else:
            self.exit()

    def on_unmount(self) -> None:
        self.collector.stop()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)


def run_home(tasks_root: str | None = None, runs: str = "runs") -> int:
    """``smoldata-tui`` with no arguments."""
    if not (sys.stdin.isatty() and sys.__stderr__ is not None and sys.__stderr__.isatty()):
        print("smoldata-tui: needs a terminal (see smoldata-tui --help for the commands)", file=sys.stderr)
        return 2
    LiveApp(tasks_root=Path(tasks_root) if tasks_root else None, runs=Path(runs)).run()
    return 0


def run_live(spec: EpisodeSpec) -> int:
    if not (sys.stdin.isatty() and sys.__stderr__ is not None and sys.__stderr__.isatty()):
        print("smoldata-tui run: needs a terminal; pass --headless for text output", file=sys.stderr)
        spec.endpoint.close()
        return 2
    app = LiveApp(spec)
    app.run()
    return episode_exit_status(app)


def episode_exit_status(app: LiveApp) -> int:
    """As headless: 0 when the episode's agent finished and was graded, else 1 (read once the app
    has exited, when its screen stack is already empty)."""
    result = getattr(app.live_screen, "result", None)
    return result.exit_status if result is not None else 1
