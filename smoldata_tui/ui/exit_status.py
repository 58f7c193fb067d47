"""The exit status of a TUI run, matching the CLI's and ``--headless``'s: 3 when the app ended on
an internal error (Textual shows its traceback, then returns from ``run()`` as if quit), 130 after
SIGINT, otherwise what the command itself says (the episode's status, 0 for the viewer)."""

from __future__ import annotations

import signal
import sys

from textual.app import App

EXIT_INTERNAL_ERROR = 3  # as cli.main answers an exception it did not expect
EXIT_SIGINT = 128 + signal.SIGINT  # as headless answers Ctrl-C sent as a signal


def has_terminal() -> bool:
    """Whether Textual can run here: it draws on stderr and reads keys from stdin, so both must be a
    terminal (otherwise the command says so and exits 2)."""
    return sys.stdin.isatty() and sys.__stderr__ is not None and sys.__stderr__.isatty()


def signal_exit_status(signum: int) -> int:
    """The status a stop signal ends the run with when nothing else decides it (the watchdog that
    ends a process Textual did not return from): 130 for SIGINT, 1 for SIGTERM and SIGHUP."""
    return EXIT_SIGINT if signum == signal.SIGINT else 1


def tui_exit_status(app: App, status: int, *, stop_status: int | None = None) -> int:
    """``status``, unless the app crashed (3) or SIGINT stopped it (130)."""
    if app.return_code:  # Textual sets 1 when an unhandled exception ended the app
        return EXIT_INTERNAL_ERROR
    if stop_status == EXIT_SIGINT:
        return EXIT_SIGINT
    return status
