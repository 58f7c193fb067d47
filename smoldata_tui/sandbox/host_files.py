"""Read and write a local sandbox's files from the host, without starting a process.

Paths are resolved the way the sandboxed kernel resolves them: an absolute symlink target is
relative to the sandbox's ``/`` (``/root/workdir`` -> ``/workdir`` means ``<root>/workdir``, never the
host's ``/workdir``), and a bind is followed to its host source. Resolution walks directory file
descriptors and opens every component with ``O_NOFOLLOW``, so an agent that swaps a directory for a
symlink while we write cannot redirect the write outside the sandbox. ``..`` above ``/`` is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.sandbox.errors import PathOutsideSandbox, ReadOnlyPath
from smoldata_tui.sandbox.layout import KERNEL_MOUNTS, Mount, is_under

_MAX_SYMLINKS = 40  # the kernel's limit
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted by the agent must not hang the host; it is refused after fstat.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


@dataclass(frozen=True)
class _Entry:
    parent_fd: int  # owned by the caller of _resolve
    name: str
    writable: bool


class HostFiles:
    """File access to the sandbox whose ``/`` is the host directory ``root``."""

    def __init__(self, root: Path, mounts: tuple[Mount, ...]) -> None:
        self._root = root
        self._mounts: Mapping[str, Mount] = {mount.sandbox: mount for mount in mounts}

    def write_bytes(self, path: str, data: bytes) -> None:
        with self._entry(path, create_parents=True) as entry:
            if not entry.writable:
                raise ReadOnlyPath(f"{path!r} is on a read-only bind")
            fd = os.open(entry.name, _WRITE_FLAGS, 0o644, dir_fd=entry.parent_fd)
            with os.fdopen(fd, "wb", buffering=0) as file:
                _require_regular(file.fileno(), path)
                view = memoryview(data)
                while view:
                    view = view[file.write(view) :]

    def read_bytes(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must be >= 0")
        with self._entry(path, create_parents=False) as entry:
            fd = os.open(entry.name, _READ_FLAGS, dir_fd=entry.parent_fd)
        try:
            _require_regular(fd, path)
            chunks: list[bytes] = []
            wanted = limit
            while wanted is None or wanted > 0:
                chunk = os.pread(fd, _CHUNK if wanted is None else min(_CHUNK, wanted), offset)
                if not chunk:
                    break
                chunks.append(chunk)
                offset += len(chunk)
                wanted = None if wanted is None else wanted - len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def size(self, path: str) -> int | None:
        """The size of a regular file; ``None`` when nothing is there."""
        info = self._stat(path)
        if info is None:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", path)
        return info.st_size

    def exists(self, path: str) -> bool:
        return self._stat(path) is not None

    def _stat(self, path: str) -> os.stat_result | None:
        try:
            with self._entry(path, create_parents=False) as entry:
                return os.stat(entry.name, dir_fd=entry.parent_fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None

    @contextmanager
    def _entry(self, path: str, *, create_parents: bool) -> Iterator[_Entry]:
        entry = self._resolve(path, create_parents)
        try:
            yield entry
        finally:
            os.close(entry.parent_fd)

    def _resolve(self, path: str, create_parents: bool) -> _Entry:
        """The directory holding ``path``'s final component, with every symlink (the final one
        included) resolved inside the sandbox."""
        if not isinstance(path, str) or not path.startswith("/"):
            raise PathOutsideSandbox(f"sandbox paths are absolute: {path!r}")
        root_fd = os.open(self._root, _DIR_FLAGS)
        stack: list[tuple[int, bool]] = [(root_fd, True)]  # (directory fd, writable) from / down
        names: list[str] = []
        pending = [part for part in path.split("/") if part not in ("", ".")]
        links = 0
        try:
            while pending:
                name = pending.pop(0)
                parent_fd, writable = stack[-1]
                if name == "..":
                    if not names:
                        raise PathOutsideSandbox(f"{path!r} climbs above the sandbox's /")
                    os.close(stack.pop()[0])
                    names.pop()
                    continue
                here = "/" + "/".join([*names, name])
                if any(is_under(here, kernel) for kernel in KERNEL_MOUNTS):
                    raise PathOutsideSandbox(f"{here!r} exists only inside the running sandbox: use exec")
                mount = self._mounts.get(here)
                if mount is not None and not mount.host.is_dir():
                    if pending:
                        raise NotADirectoryError(errno.ENOTDIR, "not a directory", here)
                    return _Entry(os.open(mount.host.parent, _DIR_FLAGS), mount.host.name, mount.writable)
                if mount is not None:
                    stack.append((os.open(mount.host, _DIR_FLAGS), mount.writable))
                    names.append(name)
                    continue
                target = _symlink_target(parent_fd, name)
                if target is not None:
                    links += 1
                    if links > _MAX_SYMLINKS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
                    if target.startswith("/"):
                        while len(stack) > 1:
                            os.close(stack.pop()[0])
                        names.clear()
                    pending[:0] = [part for part in target.split("/") if part not in ("", ".")]
                    continue
                if not pending:
                    return _Entry(os.dup(parent_fd), name, writable)
                stack.append((self._open_directory(parent_fd, name, here, writable, create_parents), writable))
                names.append(name)
            # The path ends at a directory we hold ("/", a bind's mount point, or after ".."): name it ".".
            fd, writable = stack[-1]
            return _Entry(os.dup(fd), ".", writable)
        finally:
            for fd, _writable in stack:
                os.close(fd)

    @staticmethod
    def _open_directory(parent_fd: int, name: str, here: str, writable: bool, create: bool) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            if not create:
                raise
            if not writable:
                raise ReadOnlyPath(f"cannot create {here!r}: it is on a read-only bind") from None
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass  # made concurrently: fine, open it
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def _symlink_target(parent_fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=parent_fd)
    except OSError as error:  # EINVAL: not a symlink; ENOENT: nothing there yet
        if error.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _require_regular(fd: int, path: str) -> None:
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file (FIFO, socket or device)", path)
