"""Errors of the sandbox layer. Expected failures raise one of these with a message a person can act
on; callers show ``str(error)`` and never need a traceback."""

from __future__ import annotations

INSTALL_HINT = (
    "Install it with your package manager: `apt-get install bubblewrap` (Debian/Ubuntu), "
    "`dnf install bubblewrap` (Fedora/RHEL), `pacman -S bubblewrap` (Arch), "
    "`apk add bubblewrap` (Alpine), `zypper install bubblewrap` (openSUSE)."
)


class SandboxError(Exception):
    """A sandbox could not be created or used."""


class BubblewrapMissing(SandboxError):
    """The ``bwrap`` executable was not found."""

    def __init__(self, bwrap: str) -> None:
        super().__init__(f"bubblewrap (`{bwrap}`) was not found: local sandboxes need it. {INSTALL_HINT}")
        self.bwrap = bwrap


class NamespacesUnavailable(SandboxError):
    """bubblewrap exists but the kernel (or the container around us) refuses the namespaces it needs."""


class FileTooLarge(SandboxError):
    """A file the agent controls is past what the host reads whole (``READ_TEXT_LIMIT``)."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} is {size} bytes, past the {limit >> 20} MiB this tool reads from a sandbox: not read")
        self.path, self.size, self.limit = path, size, limit


class SandboxClosed(SandboxError):
    """The sandbox was killed (explicitly, at its lifetime limit, or at interpreter exit)."""


class PathOutsideSandbox(SandboxError, ValueError):
    """A path is relative, climbs above the sandbox's ``/``, or names something that exists only
    inside the running sandbox (``/proc``, ``/dev``)."""


class ReadOnlyPath(SandboxError, PermissionError):
    """A write to a read-only bind (system directories, ``binds=``)."""
