"""Who runs an episode: the process named for good, so a reader can tell a live run from one
whose process is gone (SIGKILL, a crash, a reboot)."""

from __future__ import annotations

import os


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _host() -> str:
    import socket  # here: reading a fleet's metadata (check, the fleet table) seldom needs it

    return socket.gethostname()


def owner_record() -> dict:
    """This process, named for good: pid + start time (pids are reused) + boot id (start times
    restart at boot) + host (a runs folder may be shared)."""
    from smoldata_tui.sandbox.processes import start_time

    pid = os.getpid()
    return {"pid": pid, "start_time": start_time(pid), "boot_id": _boot_id(), "host": _host()}


def owner_alive(owner: dict) -> bool | None:
    """Whether the process an :func:`owner_record` names still runs; None when this machine
    cannot tell (no record, or another host's)."""
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
