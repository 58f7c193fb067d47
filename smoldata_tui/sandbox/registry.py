"""Which local sandboxes exist: the live ones of this interpreter (killed at exit), and the host
directories of sandboxes whose owner died without cleaning up.

A sandbox's folder is live while its owner holds the lock on ``owner.lock`` in it (see
:mod:`~smoldata_tui.sandbox.owner_lock`): that holds across PID namespaces and containers, where a
pid names nobody. A cleaner removes a folder only after taking that lock itself, and holds it while
removing. ``sandbox.json`` names the owner and the sandbox's own host processes by pid and start
time: information, and the way to end a dead owner's leftover processes; liveness rests on the pid
only for folders made before the lock (no ``lock`` in ``sandbox.json``)."""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from smoldata_tui.sandbox import owner_lock
from smoldata_tui.sandbox.layout import remove_tree
from smoldata_tui.sandbox.processes import start_time

STATE_FILE = "sandbox.json"
LOCK_FILE = "owner.lock"
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
    interpreter killed instead, the kernel ends the keepers through --die-with-parent, and with
    them every process of their namespaces; only their directories stay, for :func:`remove_stale`.)"""
    with _live_lock:
        sandboxes = list(_live)
    for sandbox in sandboxes:
        try:
            sandbox.kill()
        except Exception:  # keep cleaning the others
            _log.exception("could not clean up a sandbox at exit")


@contextmanager
def new_sandbox_dir(control_dir: Path) -> Iterator[int]:
    """Make a sandbox's folder and take its lock, before its ``sandbox.json`` makes it a sandbox
    anyone lists; yields the lock's descriptor, which the sandbox holds for its whole life. An
    error inside removes the folder and drops the lock."""
    control_dir.mkdir(parents=True, mode=0o700)
    lock = None
    try:
        lock = owner_lock.hold(control_dir / LOCK_FILE)
        yield lock
    except BaseException:
        try:
            remove_dir(control_dir)
        finally:
            if lock is not None:
                owner_lock.release(lock)
        raise


def remove_dir(control_dir: Path) -> None:
    """Remove a sandbox's folder, its lock last, so a cleaner never finds it unlocked while any of
    it is left (``sandbox.json`` goes before the lock: then nobody lists it any more). The caller
    holds the lock."""
    try:
        names = sorted(os.listdir(control_dir))
    except FileNotFoundError:
        return
    for name in names:
        if name != LOCK_FILE:
            remove_tree(control_dir / name)
    remove_tree(control_dir)


def write_state(control_dir: Path, *, sandbox_id: str, metadata: dict[str, str]) -> None:
    state = {
        "sandbox_id": sandbox_id,
        "lock": LOCK_FILE,
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
    owner_pid: int  # in the owner's PID namespace: maybe no process, or another one, in ours
    owner_alive: bool
    created: float | None
    metadata: dict = field(default_factory=dict)
    processes: list[tuple[int, int]] = field(default_factory=list)
    locked: bool = False  # made with a lock: only its lock's holder may remove it

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
        locked = state.get("lock") == LOCK_FILE
        held = owner_lock.is_held(control_dir / LOCK_FILE) if locked else None
        # No answer from the lock (a folder older than it, a file system without locks): the pid's.
        alive = held if held is not None else started is not None and start_time(owner) == started
        found.append(SandboxDir(control_dir, owner, alive, created, metadata, processes, locked))
    return found


def remove_leftover(sandbox: SandboxDir) -> bool:
    """End what is left of a dead owner's sandbox (killing its init ends its whole PID namespace),
    then remove its folder: its root holds the agent's files and the endpoint key. Holds the
    sandbox's lock throughout; False (nothing done) when the lock is held, by its owner or by
    another cleaner, or already gone with the folder. Raises OSError for what it cannot remove."""
    claim = None
    if sandbox.locked:
        try:
            claim = owner_lock.take(sandbox.control_dir / LOCK_FILE)
        except FileNotFoundError:  # another cleaner removed it meanwhile (the lock goes last)
            return False
        if claim is None:
            return False
    try:
        for pid in sandbox.live_processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        remove_dir(sandbox.control_dir)
    finally:
        if claim is not None:
            owner_lock.release(claim)
    return True


def remove_stale(base_dir: Path) -> list[str]:
    """Remove the sandboxes whose owner is gone (and their processes); return their ids. One
    that cannot be removed is logged and skipped: it never stops a new sandbox."""
    removed: list[str] = []
    for sandbox in list_sandboxes(base_dir):
        if sandbox.owner_alive:  # a live owner (maybe another smoldata-tui, anywhere): not ours to remove
            continue
        try:
            if remove_leftover(sandbox):
                removed.append(sandbox.sandbox_id)
        except OSError as error:
            _log.warning("could not remove the leftover sandbox %s: %s", sandbox.control_dir, error)
    return removed
