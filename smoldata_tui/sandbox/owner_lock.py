"""Liveness by lock: the process that owns a sandbox (or runs an episode) holds an exclusive
``flock`` on a file for as long as the thing lives, and anyone may ask whether it is still held.

Why a lock and not a pid: two runs in different PID namespaces (containers, CI jobs) sharing one
cache folder see each other's pids as other processes, or as none. A flock is the kernel's: it
works across PID namespaces and containers sharing a file system on one kernel, and the kernel
drops it however its holder ends, SIGKILL included. The lock lives on the open file description, so
it must never reach another process: the descriptor is opened close-on-exec (children that exec,
such as bwrap, lose it), and a child forked without exec closes its copy at once (the parent's
lock stays).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading

_held: set[int] = set()  # the lock descriptors this process has open
_held_lock = threading.Lock()
_OPEN_EXISTING = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # O_NONBLOCK: a FIFO never hangs us


def _forget_in_child() -> None:
    global _held_lock
    _held_lock = threading.Lock()  # another thread may have held it at the fork
    for fd in list(_held):  # this child must not keep its parent's runs alive
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _keep(fd: int) -> int:
    with _held_lock:
        _held.add(fd)
    return fd


def release(fd: int, path: str | os.PathLike[str] | None = None) -> None:
    """Drop a lock taken by :func:`hold` or :func:`take`; with ``path``, remove its file first
    (while still holding it, so nobody finds the file unlocked in between)."""
    try:
        if path is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    finally:
        with _held_lock:
            _held.discard(fd)
        os.close(fd)


def hold(path: str | os.PathLike[str]) -> int:
    """Create the lock file at ``path`` (which must not exist) and hold it: the descriptor to
    :func:`release` at the end of what it guards."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else has it
    except BaseException:
        os.close(fd)
        raise
    return _keep(fd)


def take(path: str | os.PathLike[str]) -> int | None:
    """Hold the existing lock file at ``path`` when its owner is gone: the descriptor, or None
    when someone holds it (the owner lives, or another cleaner got there first). Raises
    FileNotFoundError when there is no such file, OSError when the file system cannot lock."""
    fd = os.open(path, _OPEN_EXISTING)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return _keep(fd)


def is_held(path: str | os.PathLike[str]) -> bool | None:
    """Whether someone holds the lock at ``path``; None when that cannot be told: no such file,
    not a regular file, or a file system without locks. A shared probe: two readers asking at
    once do not see each other as the owner."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError as error:
        return True if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
    finally:
        os.close(fd)  # drops the probe's shared lock, if it got one
