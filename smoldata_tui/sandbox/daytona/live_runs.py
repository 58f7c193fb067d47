"""Which of our Daytona sandboxes belong to a run that is still alive on this machine.

A file per sandbox (``<cache>/smoldata-tui/daytona-runs/<sandbox name>.json``) names the process
that owns it. It is written before the create request goes out (the name is ours and unique; the
id comes later), so a sandbox still being built is never taken for an orphan. ``daytona gc`` deletes labelled sandboxes whose owner is gone (crashed, SIGKILLed,
another machine's run that ended without cleanup), and leaves those of live runs alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from smoldata_tui.sandbox.processes import start_time


def runs_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "smoldata-tui", "daytona-runs")


def _path(name: str) -> Path:
    return runs_dir() / f"{name.replace('/', '_')}.json"


def record(name: str) -> None:
    path = _path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"name": name, "pid": os.getpid(), "start_time": start_time(os.getpid()), "created": time.time()}
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(state) + "\n", encoding="utf-8")
    os.replace(partial, path)  # whole or absent: a reader never takes a half-written record for a dead one


def forget(name: str) -> None:
    _path(name).unlink(missing_ok=True)


def forget_dead() -> int:
    """Remove the records whose owner process is gone (a SIGKILLed run leaves its record behind);
    how many were removed. A dead owner's record protects nothing, whatever became of its sandbox."""
    removed = 0
    try:
        paths = list(runs_dir().glob("*.json"))
    except OSError:
        return 0
    for path in paths:
        if live_owner(path.stem) is None:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def live_owner(name: str) -> int | None:
    """The pid of the live process on this machine that runs the sandbox named ``name``, or None."""
    try:
        state = json.loads(_path(name).read_text(encoding="utf-8"))
        pid, started = int(state["pid"]), state["start_time"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if started is None:  # no start time readable here (/proc hidden): trust the pid alone
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        return pid
    return pid if start_time(pid) == started else None
