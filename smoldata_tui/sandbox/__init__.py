"""Sandboxes for OpenCode episodes: the protocol of opencode_env's sandbox backends, and a local
backend on bubblewrap. Core layer: no Textual, and openenv/daytona are never imported here."""

from smoldata_tui.sandbox.errors import (
    BubblewrapMissing,
    NamespacesUnavailable,
    PathOutsideSandbox,
    ReadOnlyPath,
    SandboxClosed,
    SandboxError,
)
from smoldata_tui.sandbox.local import LocalSandbox, LocalSandboxBackend, default_base_dir
from smoldata_tui.sandbox.commands import LocalBgJob
from smoldata_tui.sandbox.protocol import (
    TIMEOUT_EXIT_CODE,
    BgJob,
    ExecResult,
    FileTransfer,
    SandboxBackend,
    SandboxHandle,
)

__all__ = [
    "TIMEOUT_EXIT_CODE",
    "BgJob",
    "BubblewrapMissing",
    "ExecResult",
    "FileTransfer",
    "LocalBgJob",
    "LocalSandbox",
    "LocalSandboxBackend",
    "NamespacesUnavailable",
    "PathOutsideSandbox",
    "ReadOnlyPath",
    "SandboxBackend",
    "SandboxClosed",
    "SandboxError",
    "SandboxHandle",
    "default_base_dir",
]
