"""``smoldata-tui run`` without ``--headless``: the live episode in the terminal.

Every way out stops a running episode first (the agent stopped, what it wrote kept, the sandbox
released, the metadata saying what happened): `q`, Ctrl+C (asks, on every screen), Ctrl+Q, and
SIGINT, SIGTERM, SIGHUP. A closed terminal (SIGHUP) cannot be drawn on or read any more: the
app's terminal is swapped for harmless stand-ins before anything is written to it, and a watchdog
ends the process once the episode is saved should Textual still not return.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.tasks import TaskError, load_task_set
from smoldata_tui.trace.text import neutralize
from smoldata_tui.ui.apps.navigation import Navigation
from smoldata_tui.ui.screens.palette import ScreenCommands
from smoldata_tui.ui.exit_status import has_terminal, signal_exit_status, tui_exit_status
from smoldata_tui.ui.gc_tuning import QuietCollector
from smoldata_tui.ui.theme_text import ReadableTheme

STOP_SIGNALS = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP (terminal closed)", signal.SIGINT: "SIGINT"}
EPISODE_STOP_S = 180.0  # enough for the agent's TERM grace, `opencode export` and the sandbox's removal
EXIT_GRACE_S = 10.0  # after the episode is saved, how long Textual gets to restore the terminal


class LiveApp(ReadableTheme, Navigation, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "smoldata-tui"
    COMMANDS = App.COMMANDS | {ScreenCommands}
    BINDINGS = [Binding("ctrl+c", "interrupt", "Cancel the episode", show=False, priority=True)]

    def __init__(self, spec: EpisodeSpec | None = None, *, tasks_root: Path | None = None,
                 runs: Path = Path("runs")) -> None:  # fmt: skip
        """With a spec: that episode, live. Without: the home screen (task set, saved episodes)."""
        super().__init__()
        self.spec = spec
        self.tasks_root = tasks_root
        self.runs = runs
        self.collector = QuietCollector()
        self.live_screens: list = []  # every LiveScreen started, kept after Textual drops its screens
        self._terminal_lost = False
        self.unmounted = threading.Event()  # Textual has returned: a stop signal's watchdog stands down
        self.stop_status: int | None = None  # the status a stop signal ends with, once one came (130 for SIGINT)

    def watch_episode(self, screen) -> None:
        self.live_screens.append(screen)

    def running_episodes(self) -> list:
        return [screen for screen in self.live_screens if not screen.ended.is_set()]

    def on_mount(self) -> None:
        self.collector.start()
        loop = asyncio.get_running_loop()
        for sig, reason in STOP_SIGNALS.items():  # a closed terminal, `kill`, Ctrl-C sent as a signal
            loop.add_signal_handler(sig, self.stop_signal, sig, reason)
        self.push_screen(self.first_screen())

    def first_screen(self):
        if self.spec is not None:
            from smoldata_tui.ui.screens.live import LiveScreen

            if self.spec.endpoint.fork:  # run --fork: the diff against its parent opens when it ends
                from smoldata_tui.ui.screens.fork_launch import ForkLiveScreen

                return ForkLiveScreen(self.spec, Path(self.spec.endpoint.fork["parent"]))
            return LiveScreen(self.spec)
        from smoldata_tui.ui.screens.home import HomeScreen

        return HomeScreen(self.tasks_root, self.runs)

    def stop_signal(self, signum: int, reason: str) -> None:
        if signum == signal.SIGHUP and not self._terminal_lost:
            self._terminal_lost = True
            detach_from_terminal()
        self.stop_status = signal_exit_status(signum)
        exit_when_saved(self, self.stop_status)
        self.terminate(reason)

    def terminate(self, reason: str = "quit") -> None:
        """Quit as `q` does: a running episode is stopped, saved and its sandbox released first."""
        running = [screen for screen in self.running_episodes() if screen.running]
        if running:
            running[-1].action_quit_episode(reason)
        else:
            self.exit()

    async def action_quit(self) -> None:  # Ctrl+Q
        self.terminate("Ctrl+Q (quit)")

    def action_interrupt(self) -> None:  # Ctrl+C, wherever the user is
        running = [screen for screen in self.running_episodes() if screen.running]
        if running:
            running[-1].action_cancel("Ctrl+C")
        else:
            self.exit()

    def on_unmount(self) -> None:
        self.unmounted.set()
        self.collector.stop()
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def detach_from_terminal() -> None:
    """Point stdin at a pipe that never has data, and stdout/stderr at /dev/null: a hung-up
    terminal fails every write (Textual's writer thread would die and the app block) and is
    always "readable" (its input thread would spin at 100% CPU)."""
    quiet_read, keep_open = os.pipe()
    detach_from_terminal.keep_open = keep_open  # the write end stays open: reads never see EOF
    os.dup2(quiet_read, 0)
    os.close(quiet_read)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def exit_when_saved(app: LiveApp, status: int) -> None:
    """After a stop signal: once every episode has saved and released its sandbox, give Textual
    :data:`EXIT_GRACE_S` to return, then end the process (a signal must never leave it behind).
    Once Textual has returned, the rest of the exit is :func:`_run_guarded`'s to bound: the
    process may go on (an app run by a test) and must not be ended from here."""
    if getattr(app, "_exit_watchdog", None) is not None:
        return

    def watchdog() -> None:
        for screen in list(app.live_screens):
            screen.ended.wait(EPISODE_STOP_S)
        if not app.unmounted.wait(EXIT_GRACE_S):
            os._exit(status)

    app._exit_watchdog = threading.Thread(target=watchdog, name="exit-watchdog", daemon=True)
    app._exit_watchdog.start()


def stop_episodes(app: LiveApp, reason: str) -> None:
    """Whatever ended the app (a crash, a path not foreseen): no episode outlives it."""
    running = app.running_episodes()
    for screen in running:
        screen.episode.cancel(reason)
    for screen in running:
        screen.ended.wait(EPISODE_STOP_S)


def _run_guarded(app: LiveApp) -> None:
    """``app.run()``, with every stop signal cancelling the episodes also before the app has
    installed its handlers and after it has removed them."""

    def on_signal(signum, _frame) -> None:
        if signum == signal.SIGHUP:
            detach_from_terminal()
        for screen in app.running_episodes():
            screen.episode.cancel(STOP_SIGNALS[signum])

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        app.run()
    finally:
        for sig in STOP_SIGNALS:  # Textual's loop put back the defaults: catch them again
            signal.signal(sig, on_signal)
        try:
            stop_episodes(app, "the app exited")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if app.stop_status is not None:
                _end_process_after(EXIT_GRACE_S, app.stop_status)


def _end_process_after(seconds: float, status: int) -> None:
    """A stop signal ends the process: should the interpreter's own exit hang (a thread that
    does not end), end it after ``seconds``."""

    def guard() -> None:
        threading.Event().wait(seconds)
        os._exit(status)

    threading.Thread(target=guard, name="exit-guard", daemon=True).start()


def run_home(tasks_root: str | None = None, runs: str = "runs") -> int:
    """``smoldata-tui`` with no COMMAND (``--tasks DIR``: that task set); exit 2 when DIR holds no
    readable task set, said before any screen is drawn."""
    if tasks_root is not None:
        try:
            load_task_set(tasks_root)
        except TaskError as exc:
            print(f"smoldata-tui --tasks: {neutralize(str(exc))}", file=sys.stderr)
            return 2
    if not has_terminal():
        print("smoldata-tui: needs a terminal (see smoldata-tui --help for the commands)", file=sys.stderr)
        return 2
    app = LiveApp(tasks_root=Path(tasks_root) if tasks_root else None, runs=Path(runs))
    _run_guarded(app)
    return tui_exit_status(app, 0, stop_status=app.stop_status)


def run_live(spec: EpisodeSpec) -> int:
    if not has_terminal():
        print("smoldata-tui run: needs a terminal; pass --headless for text output", file=sys.stderr)
        spec.endpoint.close()
        return 2
    app = LiveApp(spec)
    _run_guarded(app)
    return tui_exit_status(app, episode_exit_status(app), stop_status=app.stop_status)


def episode_exit_status(app: LiveApp) -> int:
    """As headless: 0 when the episode's agent finished and was graded, else 1 (read once the app
    has exited, when its screen stack is already empty)."""
    result = app.live_screens[0].result if app.live_screens else None
    return result.exit_status if result is not None else 1
