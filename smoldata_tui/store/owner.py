"""Who runs an episode, so a reader can tell a live run from one whose process is gone (SIGKILL,
a crash, a reboot): the running process holds a lock on ``<stem>.lock`` beside the trace for
the whole run (:mod:`~smoldata_tui.sandbox.owner_lock`, which works across PID namespaces and
containers sharing the folder) and removes it at the end; the metadata's ``owner`` record also
names the process for good (pid, start time, boot id, host), which is the whole answer for
episodes saved before the lock."""

from __future__ import annotations

import logging
import os
from pathlib import Path

LOCK_SUFFIX = ".lock"  # beside the trace: run.jsonl -> run.lock (never a *.jsonl, never a trace)


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _host() -> str:
    import socket  # here: reading a fleet's metadata (check, the fleet table) seldom needs it

    return socket.gethostname()


def owner_record(*, locked: bool = False) -> dict:
    """This process, named for good: pid + start time (pids are reused) + boot id (start times
    restart at boot) + host (a runs folder may be shared); ``locked``: it holds the run's lock
    (:class:`RunLock`)."""
    from smoldata_tui.sandbox.processes import start_time

    pid = os.getpid()
    record = {"pid": pid, "start_time": start_time(pid), "boot_id": _boot_id(), "host": _host()}
    if locked:
        record["lock"] = True
    return record


class RunLock:
    """The lock a running episode holds on the file at ``path`` (the trace's ``<stem>.lock``),
    from before its metadata first says ``running`` until after it says how the run ended."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from smoldata_tui.sandbox import owner_lock

        self.path = os.fspath(path)
        self._fd: int | None = owner_lock.hold(self.path)

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        from smoldata_tui.sandbox import owner_lock

        fd, self._fd = self._fd, None
        if fd is not None:
            owner_lock.release(fd, self.path)


def remove_stale_run_lock(path: str | os.PathLike[str] | None) -> None:
    """Remove the lock file a dead owner left (once its episode is marked interrupted); a lock
    someone holds is left alone."""
    from smoldata_tui.sandbox import owner_lock

    try:
        fd = owner_lock.take(path) if path is not None else None
    except OSError:
        return
    if fd is not None:
        owner_lock.release(fd, path)


def hold_run_lock(trace: str | os.PathLike[str]) -> RunLock | None:
    """The run's lock beside ``trace``; None (the pid rule alone then) where it cannot be taken."""
    trace = Path(trace)
    try:
        return RunLock(trace.with_name(trace.stem + LOCK_SUFFIX))
    except OSError as error:
        logging.getLogger(__name__).warning("no run lock beside %s (%s): liveness by pid only", trace, error)
        return None


def owner_alive(owner: dict, lock_path: str | os.PathLike[str] | None = None) -> bool | None:
    """Whether the process an :func:`owner_record` names still runs; None when this machine
    cannot tell (no record, or another host's). ``lock_path``: the run's lock file, for a
    record that says it held one: held means alive, wherever the owner runs; free means gone."""
    if owner.get("lock") is True and lock_path is not None:
        from smoldata_tui.sandbox.owner_lock import is_held

        held = is_held(lock_path)
        if held:
            return True
        if held is False:  # the owner removes the file before it lets go: it did not end on its own
            return False if owner.get("host") in (None, _host()) else None
        # No file: the run ended and removed it (what was read said running just before), or the
        # folder was tidied by hand; its end is not this reader's to declare.
        return None
    from smoldata_tui.sandbox.processes import start_time

    pid, started = owner.get("pid"), owner.get("start_time")
    if not isinstance(pid, int) or isinstance(pid, bool) or started is None:
        return None
    if owner.get("host") not in (None, _host()):
        return None
    boot = owner.get("boot_id")
    if boot is not None and _boot_id() is not None and boot != _boot_id():
        return False  # the machine restarted since
    return start_time(pid) == started
