"""Steps that may block for minutes (``pull_bucket.py``, a grader, the capture proxy's probe of an
endpoint that never answers) stopped by the episode's cancel event, so SIGTERM, SIGHUP or a
cancelled run act at once instead of when the step ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TypeVar

_POLL_S = 0.1
T = TypeVar("T")


class Cancelled(Exception):
    """The episode was cancelled while the step ran."""


class TimedOut(Exception):
    """The step had not returned after the caller's ``timeout_s``; it was abandoned."""


def call_unless_cancelled(step: Callable[[], T], cancel: threading.Event | None, timeout_s: float | None = None) -> T:
    """``step()``, or :class:`Cancelled` as soon as ``cancel`` is set (:class:`TimedOut` once
    ``timeout_s`` has passed). The step goes on in a daemon thread until what it waits on goes away:
    the caller releases the sandbox, or the step's own timeouts end it."""
    if cancel is None and timeout_s is None:
        return step()
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = step()
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=run, name="cancellable-step", daemon=True)
    worker.start()
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    while worker.is_alive():
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        if deadline is not None and time.monotonic() >= deadline:
            raise TimedOut()
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
