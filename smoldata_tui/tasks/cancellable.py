"""Steps that may block for minutes (``pull_bucket.py``, a grader) stopped by the episode's cancel
event, so SIGTERM, SIGHUP or a cancelled run act at once instead of when the step ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

_POLL_S = 0.1
T = TypeVar("T")


class Cancelled(Exception):
    """The episode was cancelled while the step ran."""


def call_unless_cancelled(step: Callable[[], T], cancel: threading.Event | None) -> T:
    """``step()``, or :class:`Cancelled` as soon as ``cancel`` is set. The step goes on in a daemon
    thread until what it waits on goes away: the caller releases the sandbox, which ends it."""
    if cancel is None:
        return step()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = step()
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=run, name="cancellable-step", daemon=True)
    worker.start()
    while worker.is_alive():
        if cancel.is_set():
            raise Cancelled()
        worker.join(_POLL_S)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def kill_group_when(cancel: threading.Event | None, process: subprocess.Popen) -> None:
    """SIGKILL ``process``'s process group (it must lead one) if ``cancel`` is set before it ends."""
    if cancel is None:
        return

    def watch() -> None:
        while process.poll() is None:
            if cancel.wait(_POLL_S):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                return

    threading.Thread(target=watch, name="kill-on-cancel", daemon=True).start()
