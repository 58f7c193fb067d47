"""Running one command in a sandbox: to completion with its output (``exec``), or in the
background (``start_bg``). The bwrap invocation itself is built by the sandbox; this is the host side
of a running ``bwrap`` process: output, timeout, exit code, kill.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.sandbox.processes import end_tree, exit_code, kill_descendants, signal_pidfd
from smoldata_tui.sandbox.protocol import MAX_CAPTURE, TIMEOUT_EXIT_CODE, ExecResult

# After the command exits, how long its output pipes may stay open (held by a background child it
# left running) before we stop reading: exec returns when the command ends, like a container's exec.
_DRAIN_S = 0.1
_READ = 1 << 16
_ESCALATE_S = 1.0  # after a timeout's kill, how long bwrap may take to exit before its group is killed
_NAMESPACE_EXIT_S = 10.0  # SIGKILLed processes exit within milliseconds; this only bounds a hang


class _Capture:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = MAX_CAPTURE - self.kept
        self.chunks.append(data[:room])
        self.kept += min(room, len(data))
        self.dropped += max(0, len(data) - room)

    def text(self) -> str:
        text = b"".join(self.chunks).decode("utf-8", "replace")
        return text + (f"\n[sandbox: {self.dropped} more bytes of output dropped]\n" if self.dropped else "")


def run_to_completion(proc: subprocess.Popen, timeout: float | None) -> ExecResult:
    """Collect the stdout/stderr (pipes) of ``proc``, a bwrap, until it exits. Past ``timeout``
    seconds every process below bwrap is SIGKILLed and the result has exit code 124. Children that
    were orphaned before (double forks) live on until the sandbox is killed, as with ``timeout(1)``.
    ``proc`` leads its own session: if bwrap has not even started its child, its group is killed."""
    assert proc.stdout is not None and proc.stderr is not None
    captures = {proc.stdout.fileno(): _Capture(), proc.stderr.fileno(): _Capture()}
    out, err = captures.values()
    poller = select.poll()
    for fd in captures:
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN)
    pidfd = os.pidfd_open(proc.pid)  # readable once the process exits; not reaped yet, so no reuse
    poller.register(pidfd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + timeout
    exited_at: float | None = None
    timed_out = False  # then ``deadline`` is when to escalate to the process group
    open_streams = set(captures)
    try:
        while exited_at is None or (open_streams and time.monotonic() < exited_at + _DRAIN_S):
            now = time.monotonic()
            if exited_at is not None:
                wait_s: float | None = exited_at + _DRAIN_S - now
            else:
                wait_s = None if deadline is None else deadline - now
            if exited_at is None and wait_s is not None and wait_s <= 0:
                if not timed_out:
                    kill_descendants(proc.pid)
                    timed_out, deadline = True, now + _ESCALATE_S
                else:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    deadline = None
                continue
            for fd, _events in poller.poll(None if wait_s is None else max(0, int(wait_s * 1000) + 1)):
                if fd == pidfd:
                    exited_at = time.monotonic()
                    poller.unregister(pidfd)
                    continue
                try:
                    data = os.read(fd, _READ)
                except BlockingIOError:
                    continue
                if data:
                    captures[fd].add(data)
                else:
                    poller.unregister(fd)
                    open_streams.discard(fd)
    finally:
        os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
    code = exit_code(proc.wait())
    stderr = err.text()
    if timed_out:
        stderr += f"\n[sandbox: command killed after its {timeout:g} s timeout]\n"
        code = TIMEOUT_EXIT_CODE
    return ExecResult(exit_code=code, stdout=out.text(), stderr=stderr)


class LocalBgJob:
    """A command started with ``start_bg``. It has its own PID namespace inside the sandbox's, so
    :meth:`kill` ends everything it started, including children that left its process group or
    session, or were orphaned (OpenCode's bash tool runs commands that way).

    Two host processes stand for the job: ``bwrap`` (our child, whose exit status is the command's)
    and the init of the job's namespace (bwrap's reaper; the keeper's child, not bwrap's). bwrap
    learns the command's status only from a message the init sends when the command ends; an init
    that is killed sends none, and bwrap would wait forever. So we watch both and, once the init is
    gone for good, end bwrap ourselves."""

    # How long bwrap may take to exit after its namespace's init did: the status is already sent.
    _MONITOR_EXIT_S = 2.0

    def __init__(
        self,
        proc: subprocess.Popen,
        init_pid: int | None,
        log_path: Path,
        grace_s: float,
        on_exit: Callable[[LocalBgJob], None],
    ) -> None:
        self._proc = proc
        self.init_pid = init_pid
        """Host pid of the init of the job's PID namespace (``None`` if bwrap failed to start it)."""
        self._proc_pidfd = os.pidfd_open(proc.pid)  # our child, not reaped yet: no pid reuse
        self._init_pidfd = _pidfd_or_none(init_pid)  # pinned now, before its pid could be reused
        self._grace_s = grace_s
        self._on_exit = on_exit
        self._lock = threading.Lock()
        self._released = False  # the pidfds are closed once the job has ended and been reaped
        self.log_path = log_path
        """Host file with the job's stdout and stderr (removed with the sandbox)."""

    @property
    def pid(self) -> int:
        """Host pid of the job's bwrap process."""
        return self._proc.pid

    @property
    def exit_code(self) -> int | None:
        """The exit code once the job has ended, else ``None``."""
        return self._settle(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._settle(timeout)
        if code is None:
            raise TimeoutError(f"background job {self.pid} still running after {timeout:g} s")
        return code

    def kill(self) -> None:
        """TERM the job's processes, wait the grace period, then KILL its PID namespace. Idempotent."""
        with self._lock:
            if not self._released and self._proc.poll() is None:
                if self._init_pidfd is not None:
                    end_tree({self.init_pid}, {self.init_pid}, self._grace_s, self._signal_init)
                    # The init's exit completes only after every process of its namespace is gone.
                    select.select([self._init_pidfd], [], [], _NAMESPACE_EXIT_S)
                # The namespace is gone: bwrap, if still there, waits for a status that will not come.
                signal_pidfd(self._proc_pidfd, signal.SIGKILL)
        self._settle(None)

    def _signal_init(self) -> None:
        signal_pidfd(self._init_pidfd, signal.SIGKILL)

    def _settle(self, timeout: float | None) -> int | None:
        """The exit code, waiting up to ``timeout`` seconds (``None``: forever) for the job to end."""
        with self._lock:  # private copies: another thread may release the originals meanwhile
            running = not self._released and self._proc.returncode is None
            watched = [os.dup(fd) for fd in (self._proc_pidfd, self._init_pidfd) if running and fd is not None]
        try:
            if watched:
                ready = select.select(watched, [], [], timeout)[0]
                if not ready:
                    return None
                if watched[0] not in ready and not select.select(watched[:1], [], [], self._MONITOR_EXIT_S)[0]:
                    self._proc.kill()  # the init ended first and did not report: it was killed
        finally:
            for fd in watched:
                os.close(fd)
        code = exit_code(self._proc.wait())
        self._release()
        return code

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
            for fd in (self._proc_pidfd, self._init_pidfd):
                if fd is not None:
                    os.close(fd)
        self._on_exit(self)


def _pidfd_or_none(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None
