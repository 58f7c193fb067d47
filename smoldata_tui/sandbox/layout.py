"""What a local sandbox's filesystem is made of, and its host directory.

The sandbox's ``/`` is an ordinary host directory (the *root*), writable, like a container's root:
the environment's own setup (``mkdir -p /workdir && ...``) works unchanged. The host's system
directories are bound into it read-only, and ``/proc``, ``/dev`` are mounted fresh by bubblewrap.
The root already holds the layout of the environment's Daytona sandbox: ``/workdir``, ``/root``
(home) with ``/root/workdir`` -> ``/workdir``, ``/home/user/input``, ``/tmp``.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.sandbox.errors import PathOutsideSandbox, SandboxError

HOME = "/root"
WORKDIR = "/workdir"
INPUT_DIR = "/home/user/input"
# Mounted by bubblewrap in every command; they exist only inside a running sandbox.
KERNEL_MOUNTS = ("/proc", "/dev")
# On merged-/usr systems these are symlinks into /usr and are recreated as symlinks.
TOP_LEVEL_SYSTEM = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Whole directories bound read-only (when the host has them). /sys read-only, as Docker does: CPU
# counts and cgroup limits are read from it. Never /run, /var or /home: sockets, caches, secrets.
SYSTEM_DIRS = ("/usr", "/opt", "/sys")
# Only what programs need from /etc (name resolution, users, TLS roots, the dynamic linker, Debian's
# alternatives); not shadow files, SSH host keys or the host's pip/npm/git configuration.
ETC_ENTRIES = (
    "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "crypto-policies",
    "debian_version", "gai.conf", "group", "host.conf", "hosts", "inputrc", "ld.so.cache",
    "ld.so.conf", "ld.so.conf.d", "locale.alias", "localtime", "lsb-release", "mime.types",
    "nsswitch.conf", "os-release", "passwd", "pki", "profile", "profile.d", "protocols",
    "python3", "resolv.conf", "services", "ssl", "timezone",
)  # fmt: skip
WRITABLE_DIRS = {HOME: 0o700, WORKDIR: 0o755, INPUT_DIR: 0o755, "/tmp": 0o1777, "/var/tmp": 0o1777, "/run": 0o755}


@dataclass(frozen=True)
class Mount:
    """A host path bound at ``sandbox`` (an absolute, normalised sandbox path)."""

    host: Path
    sandbox: str
    writable: bool = False


@dataclass(frozen=True)
class Layout:
    mounts: tuple[Mount, ...]
    symlinks: tuple[tuple[str, str], ...]  # (sandbox path, target) created in the root
    link_workdir: bool

    def bwrap_args(self, root: Path) -> list[str]:
        args = ["--bind", str(root), "/"]
        for mount in self.mounts:
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.host), mount.sandbox]
        # A fresh tmpfs per command for POSIX semaphores and shared memory (multiprocessing, joblib).
        return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]


def sandbox_path(path: str) -> str:
    """Normalise an absolute sandbox path lexically, refusing relative paths and ``..`` above ``/``.
    (Only for paths we are given, like bind targets; file access resolves symlinks, see host_files.)"""
    if not isinstance(path, str) or not path.startswith("/"):
        raise PathOutsideSandbox(f"sandbox paths are absolute: {path!r}")
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if not parts:
                raise PathOutsideSandbox(f"{path!r} climbs above the sandbox's /")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/" + "/".join(parts)


def is_under(path: str, parent: str) -> bool:
    return parent == "/" or path == parent or path.startswith(parent + "/")


def plan_layout(binds: Iterable[tuple[Path | str, str]] = (), *, link_workdir: bool = True) -> Layout:
    """The mounts and symlinks of a sandbox: the host's system directories plus ``binds``
    (read-only ``(host_path, sandbox_path)`` pairs), which are mounted last, on top."""
    extra = [_checked_bind(host, target) for host, target in binds]
    system: list[Mount] = []
    symlinks: list[tuple[str, str]] = []
    for path in TOP_LEVEL_SYSTEM:
        if os.path.islink(path):
            symlinks.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            system.append(_host_mount(path, path))
    system += [_host_mount(path, path) for path in SYSTEM_DIRS if os.path.isdir(path)]
    system += [_host_mount(f"/etc/{name}", f"/etc/{name}") for name in ETC_ENTRIES if os.path.exists(f"/etc/{name}")]
    mounts: list[Mount] = []
    for mount in system:
        inner = [bind for bind in extra if is_under(bind.sandbox, mount.sandbox) and bind.sandbox != mount.sandbox]
        mounts += _split_for(mount, inner, symlinks)
    if link_workdir:
        symlinks.append((f"{HOME}/workdir", WORKDIR))
    return Layout(tuple(mounts + extra), tuple(symlinks), link_workdir)


def _host_mount(host: str, target: str) -> Mount:
    # bwrap mounts what a source symlink points to (/etc/os-release -> ../usr/lib/os-release); the
    # host-side file access must open the same file, without following links itself.
    return Mount(Path(os.path.realpath(host)), target)


def _checked_bind(host: Path | str, target: str) -> Mount:
    target = sandbox_path(target)
    if target == "/" or any(is_under(target, kernel) for kernel in KERNEL_MOUNTS):
        raise SandboxError(f"cannot bind onto {target!r}: it is the root or a kernel filesystem")
    host = Path(host).expanduser().resolve()
    if not host.exists():
        raise SandboxError(f"bind source {str(host)!r} (for {target!r}) does not exist")
    return Mount(host, target)


def _split_for(mount: Mount, inner: Sequence[Mount], symlinks: list[tuple[str, str]]) -> list[Mount]:
    """``mount`` itself when every bind inside it has a mount point in the host directory; otherwise
    its entries one by one (recursively), so the missing mount points can be made in the writable
    root. This is how ``binds=[(cache, "/opt/opencode")]`` works although the host's ``/opt`` has no
    ``opencode`` and is bound read-only."""
    if all(os.path.lexists(mount.host / posixpath.relpath(bind.sandbox, mount.sandbox)) for bind in inner):
        return [mount]
    parts: list[Mount] = []
    for entry in sorted(os.listdir(mount.host)):
        host_entry, target = mount.host / entry, posixpath.join(mount.sandbox, entry)
        if host_entry.is_symlink():
            symlinks.append((target, os.readlink(host_entry)))
        elif host_entry.is_dir() or host_entry.is_file():  # sockets and FIFOs stay on the host
            child = Mount(host_entry, target)
            deeper = [bind for bind in inner if is_under(bind.sandbox, target) and bind.sandbox != target]
            parts += _split_for(child, deeper, symlinks)
    return parts


def materialize(root: Path, layout: Layout) -> None:
    """Create the root's skeleton on the host: writable directories, symlinks and every mount point
    (made here, once, rather than by concurrent bubblewrap runs)."""
    root.mkdir(mode=0o755, parents=True)
    for path, mode in WRITABLE_DIRS.items():
        host = root / path.lstrip("/")
        host.mkdir(parents=True, exist_ok=True)
        os.chmod(host, mode)
    for path in KERNEL_MOUNTS:
        (root / path.lstrip("/")).mkdir(exist_ok=True)
    for mount in layout.mounts:
        point = root / mount.sandbox.lstrip("/")
        point.parent.mkdir(parents=True, exist_ok=True)
        if mount.host.is_dir():
            point.mkdir(exist_ok=True)
        else:
            point.touch(exist_ok=True)
    for path, target in layout.symlinks:
        link = root / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
    if not layout.link_workdir:
        # The state the environment's extra_setup_shell expects: it runs `rmdir /root/workdir`.
        (root / HOME.lstrip("/") / "workdir").mkdir()


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a sandbox's host directory, whatever the agent made of it: any depth (paths longer
    than PATH_MAX included), any number of entries, directories made read-only or unreadable
    (made ours again first, as a non-root owner could not empty them otherwise). Never follows a
    symlink and never enters another file system. Iterative, holding one directory open at a time:
    recursion (``shutil.rmtree`` on Python 3.11) dies of RecursionError at about 1,000 levels, and
    a descriptor per level would run out of descriptors. Raises OSError for what it cannot remove."""
    path = os.fspath(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(path)
        return
    parent = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _remove_directory(parent, os.path.basename(os.path.abspath(path)))
    finally:
        os.close(parent)


def _remove_directory(parent: int, name: str) -> None:
    """Empty and remove the directory ``name`` in the directory open at ``parent``, depth first.

    The way back up is ``..`` of the current directory, checked against the inode recorded on the
    way down: a tree moved meanwhile is an error, never a walk outside it.
    """
    current = _open_directory(parent, name, device=None)
    device = os.fstat(current).st_dev
    # per level: (its name in the level above, its inode, the subdirectories still to remove)
    levels = [(name, os.fstat(current).st_ino, _remove_files(current))]
    try:
        while levels:
            pending = levels[-1][2]
            if pending:
                child_name = pending.pop()
                try:
                    child = _open_directory(current, child_name, device)
                except FileNotFoundError:
                    continue
                os.close(current)
                current = child
                levels.append((child_name, os.fstat(current).st_ino, _remove_files(current)))
                continue
            done, _inode, _ = levels.pop()
            above = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=current) if levels else os.dup(parent)
            os.close(current)
            current = above
            if levels and (os.fstat(current).st_dev, os.fstat(current).st_ino) != (device, levels[-1][1]):
                raise OSError(errno.ESTALE, f"the tree moved while it was being removed (at {done!r})")
            os.rmdir(done, dir_fd=current)
    finally:
        os.close(current)


def _open_directory(parent: int, name: str, device: int | None) -> int:
    """``name`` in ``parent``, opened for listing, never through a symlink, its owner's rights
    restored (read, write, search); on ``device`` (the tree's file system) when given."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=parent)
    except PermissionError:  # made unreadable: fix its mode through a handle that pins it, not its name
        pinned = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{pinned}", stat.S_IRWXU)
            fd = os.open(f"/proc/self/fd/{pinned}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        finally:
            os.close(pinned)
    try:
        info = os.fstat(fd)
        if device is not None and info.st_dev != device:
            raise OSError(errno.EXDEV, f"{name!r} is a mount of another file system: not removed")
        if info.st_mode & stat.S_IRWXU != stat.S_IRWXU:
            os.fchmod(fd, stat.S_IRWXU)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _remove_files(directory: int) -> list[str]:
    """Unlink every entry of the open ``directory`` that is not a directory (symlinks included,
    never followed); the names of its subdirectories."""
    subdirectories = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                subdirectories.append(entry.name)
                continue
            try:
                os.unlink(entry.name, dir_fd=directory)
            except FileNotFoundError:
                pass
    return subdirectories
