"""Which local sandboxes exist: the live ones of this interpreter (killed at exit), and the host
directories of sandboxes whose owner died without cleaning up (found by their ``sandbox.json``)."""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Protocol

from smoldata_tui.sandbox.layout import remove_tree
from smoldata_tui.sandbox.processes import start_time

STATE_FILE = "sandbox.json"
_log = logging.getLogger(__name__)


class _Killable(Protocol):
    def kill(self) -> None: ...


_live: set[_Killable] = set()
_live_lock = threading.Lock()


def register(sandbox: _Killable) -> None:
    with _live_lock:
        _live.add(sandbox)


def unregister(sandbox: _Killable) -> None:
    with _live_lock:
        _live.discard(sandbox)


@atexit.register
def _kill_live_sandboxes() -> None:
    """At interpreter exit, end every sandbox still alive and remove its directory. (Were the
    interpreter killed instead, the kernel ends the sandboxes' processes through --die-with-parent;
    only their directories stay, for :func:`remove_stale`.)"""
    with _live_lock:
        sandboxes = list(_live)
    for sandbox in sandboxes:
        try:
            sandbox.kill()
        except Exception:  # keep cleaning the others
            _log.exception("could not clean up a sandbox at exit")


def write_state(control_dir: Path, *, sandbox_id: str, metadata: dict[str, str]) -> None:
    state = {
        "sandbox_id": sandbox_id,
        "owner_pid": os.getpid(),
        "owner_start_time": start_time(os.getpid()),
        "created": time.time(),
        "metadata": metadata,
    }
    (control_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")


def remove_stale(base_dir: Path) -> list[str]:
    """Remove the directories of sandboxes whose owning process is gone; return their ids. A
    directory without a readable state file is left alone: it may be another program's."""
    removed: list[str] = []
    if not base_dir.is_dir():
        return removed
    for control_dir in sorted(base_dir.iterdir()):
        try:
            state = json.loads((control_dir / STATE_FILE).read_text(encoding="utf-8"))
            owner, started = int(state["owner_pid"]), state["owner_start_time"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if started is not None and start_time(owner) == started:
            continue  # its owner still runs (maybe another smoldata-tui): not ours to remove
        remove_tree(control_dir)
        removed.append(control_dir.name)
    return removed
