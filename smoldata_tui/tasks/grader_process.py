"""Run a grader on the host with every size and lifetime bounded.

The grader runs under :mod:`reaper` in its own session, so nothing it starts outlives it (not
even a ``setsid`` helper). Its stdout and stderr are streamed: each through its own
:class:`SecretScrubber` (a key cut by a chunk boundary or by the cap is still masked), and only
the last ``cap`` bytes of each are kept, however much it prints. When the grader ends its leftover
helpers are killed, so one that still holds the pipes cannot make a finished grader look timed out.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.masking import SecretScrubber
from smoldata_tui.tasks.cancellable import kill_group_when

REAPER = Path(__file__).with_name("reaper.py")
READ_CHUNK = 1 << 16
STOP_GRACE_S = 15.0  # after SIGTERM the reaper kills the subtree (it gives up after 10 s); then the group gets SIGKILL
DRAIN_S = 2.0  # after the grader ended: how long its pipes may stay open before we stop reading


class _Tail:
    """The last ``cap`` bytes of a stream, scrubbed as they arrive; counts every byte seen."""

    def __init__(self, cap: int, scrubber: SecretScrubber) -> None:
        self.cap = cap
        self.seen = 0
        self._scrubber = scrubber
        self._kept = bytearray()

    def add(self, data: bytes) -> None:
        self.seen += len(data)
        self._kept += self._scrubber.feed(data)
        if len(self._kept) > 2 * self.cap:  # trimmed in bulk: appends stay amortised O(1)
            del self._kept[: len(self._kept) - self.cap]

    def value(self) -> bytes:
        self._kept += self._scrubber.flush()
        return bytes(self._kept[-self.cap :]) if len(self._kept) > self.cap else bytes(self._kept)

    @property
    def cut(self) -> bool:
        return self.seen > self.cap


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when it was stopped at the timeout
    stdout: bytes  # the kept tail, secrets masked
    stderr: bytes
    stdout_seen: int  # bytes it printed in all
    stderr_seen: int
    stdout_cap: int
    stderr_cap: int


def run_bounded(command: list[str], *, cwd: str, env: dict[str, str], stdin: bytes, timeout: float,
                stdout_cap: int, stderr_cap: int, scrubber: SecretScrubber, cancel=None) -> Outcome:  # fmt: skip
    """Run ``command`` (under the reaper) with ``stdin``; stop it at ``timeout`` seconds, or at once
    when ``cancel`` (a threading.Event) is set."""
    process = subprocess.Popen(
        [sys.executable, str(REAPER), *command],
        cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    kill_group_when(cancel, process)  # a cancelled episode (SIGTERM, SIGHUP) stops the grader now
    tails = {process.stdout: _Tail(stdout_cap, scrubber.fresh()), process.stderr: _Tail(stderr_cap, scrubber.fresh())}
    try:
        timed_out = _pump(process, stdin, tails, time.monotonic() + timeout)
    finally:
        _stop(process)
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    out, err = tails[process.stdout], tails[process.stderr]
    return Outcome(None if timed_out else process.returncode, out.value(), err.value(), out.seen, err.seen,
                   stdout_cap, stderr_cap)  # fmt: skip


def _pump(process: subprocess.Popen, stdin: bytes, tails: dict, deadline: float) -> bool:
    """Feed stdin and keep the outputs until both close; True when the deadline came first."""
    selector = selectors.DefaultSelector()
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(process.stdin.fileno(), False)
        selector.register(process.stdin, selectors.EVENT_WRITE)
    else:
        process.stdin.close()
    for stream in tails:
        selector.register(stream, selectors.EVENT_READ)
    drain_until = None
    with selector:
        while any(key.events & selectors.EVENT_READ for key in selector.get_map().values()):
            now = time.monotonic()
            if now >= deadline:
                return True
            if drain_until is None and process.poll() is not None:
                drain_until = now + DRAIN_S
            if drain_until is not None and now >= drain_until:
                return False  # the grader ended; whatever still holds its pipes is not its output
            limit = min(deadline, drain_until or deadline) - now
            for key, _ in selector.select(timeout=min(limit, 0.25)):
                if key.fileobj is process.stdin:
                    try:
                        written = os.write(process.stdin.fileno(), pending[:READ_CHUNK])
                    except BlockingIOError:
                        written = 0
                    except BrokenPipeError:
                        written = len(pending)  # it stopped reading: it has what it wanted
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(process.stdin)
                        process.stdin.close()
                    continue
                data = os.read(key.fileobj.fileno(), READ_CHUNK)
                if data:
                    tails[key.fileobj].add(data)
                else:
                    selector.unregister(key.fileobj)
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return True  # it closed its outputs but went on running
    return False


def _stop(process: subprocess.Popen) -> None:
    """The reaper kills the grader's whole subtree on SIGTERM; the group's SIGKILL is the backstop."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # anything of the group the reaper did not get to
    process.wait()
