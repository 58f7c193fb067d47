"""Host-side process work for sandboxes: spawning bwrap from one long-lived thread, finding the
processes a sandbox (or a job) started, and ending them: TERM, a grace period, then KILL.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future

_POLL_S = 0.05


class _Spawner:
    """Starts processes from a single daemon thread that lives as long as the interpreter.

    bwrap's ``--die-with-parent`` (the keeper's) and ``setpriv --pdeathsig`` (the commands' bwraps)
    are PR_SET_PDEATHSIG, which fires when the *thread* that forked bwrap exits, not the process. A
    sandbox created from a short-lived worker thread (a Textual worker, ``asyncio.to_thread``) would
    be SIGKILLed as soon as that thread returned. Forking from
    this thread ties every sandbox to the life of the interpreter instead. Not a ThreadPoolExecutor:
    its workers are joined at interpreter shutdown *before* atexit handlers run, which would kill
    the sandboxes before their atexit cleanup could end them gracefully.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        if threading.current_thread() is self._thread:
            return subprocess.Popen(argv, **kwargs)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="sandbox-spawner", daemon=True)
                self._thread.start()
        result: Future = Future()
        self._requests.put((result, argv, kwargs))
        return result.result()

    def _serve(self) -> None:
        while True:
            result, argv, kwargs = self._requests.get()
            try:
                result.set_result(subprocess.Popen(argv, **kwargs))
            except BaseException as error:  # handed to the caller, who raises it in its own thread
                result.set_exception(error)


popen = _Spawner().popen


def exit_code(returncode: int) -> int:
    """A shell-style exit code: a death by signal N is 128+N, as bash reports it."""
    return 128 - returncode if returncode < 0 else returncode


def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time) for every process on the host that has not exited (zombies
    are dead already: they only wait for their parent to collect the exit status)."""
    table: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
        except OSError:  # it exited while we looked
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # the command name may hold spaces and ")"
        if fields[0] not in (b"Z", b"X"):
            table[int(name)] = (int(fields[1]), int(fields[19]))
    return table


def descendants(roots: Iterable[int]) -> dict[int, int]:
    """Every live descendant of ``roots`` (not the roots themselves), as pid -> start time."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _start) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, int] = {}
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found[child] = table[child][1]
                todo.append(child)
    return found


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): with the pid, it names one process for good."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def _signal(processes: dict[int, int], signum: int) -> None:
    """Signal each process, unless its pid now belongs to another process (the start time differs):
    a pidfd pins the process, then /proc confirms it is the one we listed."""
    for pid, start in processes.items():
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # gone already
            continue
        try:
            if start_time(pid) == start:
                signal.pidfd_send_signal(pidfd, signum)
        except ProcessLookupError:
            pass
        finally:
            os.close(pidfd)


def kill_descendants(root: int) -> None:
    """SIGKILL every process below ``root`` but not ``root``. ``root`` is a bwrap: alive, it reaps
    its sandboxed child. Killed first, it would leave that child a zombie of the host's init, and a
    PID namespace cannot end (nor our kill() return) until its zombies are reaped."""
    _signal(descendants({root}), signal.SIGKILL)


def signal_pidfd(pidfd: int | None, signum: int) -> None:
    """Signal the process a pidfd pins (race-free, unlike a pid); nothing if it has exited."""
    if pidfd is None:
        return
    try:
        signal.pidfd_send_signal(pidfd, signum)
    except ProcessLookupError:
        pass


def end_tree(roots: set[int], helpers: set[int], grace_s: float, kill: Callable[[], None]) -> None:
    """End the processes below ``roots``: SIGTERM every one except ``helpers`` (the bwrap processes,
    whose death would SIGKILL their sandboxed child at once and void the grace period), wait up to
    ``grace_s`` for them to exit, then call ``kill``, which must SIGKILL the PID namespace's init:
    the kernel then kills every process left in that namespace, wherever it has reparented."""

    def workload() -> dict[int, int]:
        return {pid: start for pid, start in descendants(roots).items() if pid not in helpers}

    remaining = workload()
    if remaining and grace_s > 0:
        _signal(remaining, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while remaining and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            remaining = workload()
    kill()
