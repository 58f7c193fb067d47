"""The real ``smoldata-tui`` app in a pseudo-terminal, as a user runs it: keys are typed into the
terminal, signals are sent to the process, and closing the terminal hangs it up (SIGHUP to its
session, reads and writes fail). Used to prove that every way of stopping a live run stops it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import threading
import time
from pathlib import Path

from smoldata_tui.sandbox.processes import descendants, start_time


class TerminalApp:
    """``python -m smoldata_tui ARGS`` as the session leader of a new pty (it is its controlling
    terminal, so closing the master is a real hang-up). Output is drained on a thread."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path, columns: int = 160, rows: int = 48) -> None:
        pid, master = pty.fork()
        if pid == 0:  # the child: a terminal of a known size, then the app
            try:
                fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
                os.chdir(cwd)
                os.execve(sys.executable, [sys.executable, "-m", "smoldata_tui", *args], env)
            finally:
                os._exit(127)
        self.pid, self.master = pid, master
        self.output = bytearray()
        self.returncode: int | None = None
        self._closed = False
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while not self._closed:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if ready:
                    data = os.read(self.master, 65536)
                    if not data:
                        return
                    self.output += data
            except OSError:
                return

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def close_terminal(self) -> None:
        """What closing a terminal window does: the master side goes away."""
        self._closed = True
        self._reader.join(timeout=2)
        os.close(self.master)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.returncode is None and time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
                return self.returncode
            time.sleep(0.1)
        return self.returncode

    def snapshot_processes(self) -> dict[int, int]:
        """Every process below the app now (bwrap, OpenCode, the agent's tools): pid -> start time."""
        return descendants({self.pid})

    def kill(self) -> None:
        if self.returncode is None:
            for pid, start in {**self.snapshot_processes(), self.pid: start_time(self.pid)}.items():
                if start_time(pid) == start:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            self.wait(10)
        if not self._closed:
            self.close_terminal()

    @property
    def screen_text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


def still_alive(snapshot: dict[int, int]) -> list[int]:
    """The pids of the snapshot that are still the same processes."""
    return [pid for pid, start in snapshot.items() if start_time(pid) == start]
