"""A background command in its own Daytona session: the ``BgJob`` that :meth:`DaytonaSandbox.start_bg` returns.

Every call goes through the sandbox's own plumbing, so it gets the same retries and state checks.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from smoldata_tui.sandbox.daytona import shell
from smoldata_tui.sandbox.daytona.bridge import Cancelled
from smoldata_tui.sandbox.errors import SandboxError

_log = logging.getLogger(__name__)
WAIT_STEP_S = 0.25
KILLED_EXIT_CODE = 128 + 9


class DaytonaBgJob:
    """A background command in its own Daytona session (the protocol's ``BgJob``)."""

    # ``sandbox`` is the DaytonaSandbox that started the job (handle.py, which imports this module).
    def __init__(self, sandbox: Any, session_id: str, command_id: str) -> None:
        self._sandbox = sandbox
        self.session_id = session_id
        self.command_id = command_id
        self._exit_code: int | None = None
        self._pid: int | None = None

    @property
    def pid(self) -> int:
        """The job's shell inside the sandbox (-1 while unknown)."""
        if self._pid is None:
            text = self._sandbox._exec(shell.job_pid(self.session_id), timeout=30).stdout.strip()
            self._pid = int(text) if text.isdigit() else None
        return self._pid if self._pid is not None else -1

    def poll(self, *, interruptible: bool = False) -> int | None:
        if self._exit_code is None:
            process = self._sandbox._sandbox.process
            try:
                command = self._sandbox._run(
                    "checking the agent", lambda: process.get_session_command(self.session_id, self.command_id),
                    interruptible=interruptible,
                )
            except Cancelled:
                return None
            self._exit_code = command.exit_code
        return self._exit_code

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        short = timeout is not None and timeout <= 1.0  # the runner's poll: a cancel may cut it short
        while True:
            code = self.poll(interruptible=short)
            if code is not None:
                return code
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"job {self.session_id} still running")
            time.sleep(WAIT_STEP_S if left is None else min(WAIT_STEP_S, left))

    def kill(self) -> None:
        """TERM every process of the job, KILL the rest after a grace period, end its session."""
        self._sandbox._exec(shell.kill_job(self.session_id), timeout=60)
        deadline = time.monotonic() + 5.0
        while self.poll() is None and time.monotonic() < deadline:  # the session reports the exit soon after
            time.sleep(0.1)
        if self._exit_code is None:
            self._exit_code = KILLED_EXIT_CODE  # its session goes next, and with it the exit code
        process = self._sandbox._sandbox.process
        try:
            self._sandbox._run("ending the session", lambda: process.delete_session(self.session_id))
        except SandboxError as exc:
            _log.debug("could not delete session %s: %s", self.session_id, exc)
