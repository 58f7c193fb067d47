"""Run a command so that nothing it starts outlives it: ``python3 reaper.py COMMAND…``.

A grader may start helpers that leave its process group (``setsid``, a daemon's double fork), so
killing the group is not enough. This process becomes a child subreaper (``prctl``): every orphan
of its subtree is re-parented to it, whatever session or group it moved to. When the command
ends, or on SIGTERM (the host's timeout), it kills every process still in its subtree, reaps
them, and exits with the command's status (128 + N for a signal). Standard library only: it
runs as a script, outside the package.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
GIVE_UP_S = 10.0  # a process stuck in the kernel (state D) cannot be reaped: stop waiting for it


def _children_by_parent() -> dict[int, list[tuple[int, bytes]]]:
    children: dict[int, list[tuple[int, bytes]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
        children.setdefault(int(fields[1]), []).append((int(entry), fields[0]))
    return children


def _descendants() -> list[tuple[int, bytes]]:
    children, found, todo = _children_by_parent(), [], [os.getpid()]
    while todo:
        for pid, state in children.get(todo.pop(), ()):
            found.append((pid, state))
            todo.append(pid)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_subtree() -> None:
    give_up = time.monotonic() + GIVE_UP_S
    while time.monotonic() < give_up:
        living = [pid for pid, state in _descendants() if state != b"Z"]
        if not living:
            break
        for pid in living:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.01)
    _reap()


def _stop(_signum: int, _frame: object) -> None:
    kill_subtree()
    os._exit(128 + signal.SIGTERM)


def main(argv: list[str]) -> int:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the process group kill still applies
    signal.signal(signal.SIGTERM, _stop)
    child = subprocess.Popen(argv)
    code = child.wait()
    kill_subtree()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
