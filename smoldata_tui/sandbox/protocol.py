"""The sandbox protocol, with the exact shapes of opencode_env's ``opencode_env.sandbox.base``, so its
``OpenCodeSessionFactory`` can drive our backends and we can drive its backends (E2B).

Behaviour every backend follows (what the opencode_env harness relies on):

- ``exec`` runs ``cmd`` with bash and returns an :class:`ExecResult`; a failing command is a non-zero
  ``exit_code``, never an exception. A command that outlives ``timeout`` is killed and returns
  ``exit_code=124`` (the ``timeout(1)`` convention), with the output it wrote until then. ``timeout=None`` waits forever.
- ``BgJob.wait(timeout)`` returns the exit code, or raises the builtin :class:`TimeoutError` when the
  timeout elapses; the job keeps running (the harness kills it separately).
- ``write_text`` creates missing parent directories.
- ``read_text`` reads at most :data:`READ_TEXT_LIMIT` bytes onto the host and raises
  :class:`~smoldata_tui.sandbox.errors.FileTooLarge` past it: the agent writes these files (its log,
  opencode_env's proxy trace), and a sparse file of any size costs it nothing.

Our extensions live in the separate :class:`FileTransfer` protocol, so code that needs them checks
``isinstance(handle, FileTransfer)`` and keeps working (more slowly) with backends that lack them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

TIMEOUT_EXIT_CODE = 124
READ_TEXT_LIMIT = 64 << 20  # the most a whole-file read brings onto the host
MAX_CAPTURE = 32 << 20  # of a command's stdout or stderr, what exec keeps; the rest is dropped


@dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str


@runtime_checkable
class BgJob(Protocol):
    @property
    def pid(self) -> int: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


@runtime_checkable
class SandboxHandle(Protocol):
    @property
    def sandbox_id(self) -> str: ...

    def exec(
        self,
        cmd: str,
        *,
        envs: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = 60,
    ) -> ExecResult: ...

    def start_bg(
        self,
        cmd: str,
        *,
        envs: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> BgJob: ...

    def write_text(self, path: str, content: str) -> None: ...

    def read_text(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def kill(self) -> None: ...


@runtime_checkable
class SandboxBackend(Protocol):
    def create(
        self,
        *,
        timeout_s: int = 900,
        envs: dict[str, str] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> SandboxHandle: ...


@runtime_checkable
class FileTransfer(Protocol):
    """Byte-level file access. ``read_bytes(path, offset)`` returns only the bytes from ``offset`` on
    (at most ``limit``; ``b""`` past the end), so a growing agent log can be followed by its new
    bytes instead of re-reading it whole. ``size`` is ``None`` when nothing is at ``path``."""

    def write_bytes(self, path: str, data: bytes) -> None: ...

    def read_bytes(self, path: str, offset: int = 0, limit: int | None = None) -> bytes: ...

    def size(self, path: str) -> int | None: ...


def exec_repeatable(sandbox: SandboxHandle, cmd: str, **kwargs) -> ExecResult:
    """``sandbox.exec`` for a command that is safe to run twice (a probe, a read, ``chmod``,
    ``mkdir -p``, ``rm -rf``): a backend that can repeat such a command after a lost connection
    (Daytona's ``exec_repeatable``) does; ``exec`` itself must not, not knowing whether it ran."""
    run = getattr(sandbox, "exec_repeatable", None) or sandbox.exec
    return run(cmd, **kwargs)
