"""Which local sandboxes exist: the live ones of this interpreter (killed at exit), and the host
directories of sandboxes whose owner died without cleaning up (found by their ``sandbox.json``,
which names the owner and the sandbox's own host processes, each by pid and start time)."""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
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


def record_processes(control_dir: Path, processes: list[tuple[int, int | None]]) -> None:
    """Add the sandbox's own host processes (the keeper: its bwrap and the namespace's init) to
    its state file, so a cleanup after our death can find them."""
    path = control_dir / STATE_FILE
    state = json.loads(path.read_text(encoding="utf-8"))
    state["processes"] = [[pid, started] for pid, started in processes]
    temporary = path.with_name(f".{STATE_FILE}.tmp")
    temporary.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


@dataclass
class SandboxDir:
    """A sandbox directory as its state file describes it."""

    control_dir: Path
    owner_pid: int
    owner_alive: bool
    created: float | None
    metadata: dict = field(default_factory=dict)
    processes: list[tuple[int, int]] = field(default_factory=list)

    @property
    def sandbox_id(self) -> str:
        return self.control_dir.name

    def live_processes(self) -> list[int]:
        """Its processes still running (same pid and start time as recorded)."""
        return [pid for pid, started in self.processes if started is not None and start_time(pid) == started]


def list_sandboxes(base_dir: Path) -> list[SandboxDir]:
    """Every sandbox directory with a readable state file. One without is left alone: it may be
    another program's."""
    found: list[SandboxDir] = []
    if not base_dir.is_dir():
        return found
    for control_dir in sorted(base_dir.iterdir()):
        try:
            state = json.loads((control_dir / STATE_FILE).read_text(encoding="utf-8"))
            owner, started = int(state["owner_pid"]), state["owner_start_time"]
            processes = [(int(pid), when) for pid, when in state.get("processes", [])]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        created = state.get("created") if isinstance(state.get("created"), (int, float)) else None
        alive = started is not None and start_time(owner) == started
        found.append(SandboxDir(control_dir, owner, alive, created, metadata, processes))
    return found


def remove_leftover(sandbox: SandboxDir) -> None:
    """End what is left of a dead owner's sandbox (killing its init ends its whole PID namespace),
    then remove its directory: its root holds the agent's files and the endpoint key."""
    for pid in sandbox.live_processes():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    remove_tree(sandbox.control_dir)


def remove_stale(base_dir: Path) -> list[str]:
    """Remove the sandboxes whose owning process is gone (and their processes); return their ids."""
    removed: list[str] = []
    for sandbox in list_sandboxes(base_dir):
        if not sandbox.owner_alive:  # a live owner (maybe another smoldata-tui): not ours to remove
            remove_leftover(sandbox)
            removed.append(sandbox.sandbox_id)
    return removed
