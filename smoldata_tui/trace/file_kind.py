"""Regular files only: what is not one (a FIFO, a device, a socket) would block a reader forever
or never end (``/dev/zero``). Readers ask here before they open a path they were handed."""

from __future__ import annotations

import os
import stat

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotARegularFile(OSError):
    """The path is something other than a regular file: ``kind`` says what."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{os.fspath(path)} is {kind}, not a regular file")
        self.kind = kind


def kind_of(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO (named pipe)", …); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """:func:`kind_of` the file ``path`` names (links followed); None for a regular file or a
    path that cannot be examined (the caller's open reports that)."""
    try:
        return kind_of(os.stat(path).st_mode)
    except OSError:
        return None


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit``). Opened without blocking and checked on the
    open descriptor, so a FIFO swapped in after a check cannot hang the read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = kind_of(os.fstat(fd).st_mode)
        if kind is not None:
            raise NotARegularFile(path, kind)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit)
    finally:
        os.close(fd)
