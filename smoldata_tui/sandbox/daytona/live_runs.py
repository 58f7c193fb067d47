"""Which of our Daytona sandboxes belong to a run that is still alive on this machine.

A file per sandbox (``<cache>/smoldata-tui/daytona-runs/<sandbox id>.json``) names the process
that owns it. ``daytona gc`` deletes labelled sandboxes whose owner is gone (crashed, SIGKILLed,
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


def _path(sandbox_id: str) -> Path:
    return runs_dir() / f"{sandbox_id.replace('/', '_')}.json"


def record(sandbox_id: str, name: str) -> None:
    path = _path(sandbox_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"sandbox_id": sandbox_id, "name": name, "pid": os.getpid(),
             "start_time": start_time(os.getpid()), "created": time.time()}  # fmt: skip
    path.write_text(json.dumps(state) + "\n", encoding="utf-8")


def forget(sandbox_id: str) -> None:
    _path(sandbox_id).unlink(missing_ok=True)


def live_owner(sandbox_id: str) -> int | None:
    """The pid of the live process on this machine that runs this sandbox, or None."""
    try:
        state = json.loads(_path(sandbox_id).read_text(encoding="utf-8"))
        pid, started = int(state["pid"]), state["start_time"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if started is None or start_time(pid) != started:
        return None
    return pid
