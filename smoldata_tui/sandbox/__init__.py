"""Sandboxes for OpenCode episodes: the protocol of opencode_env's sandbox backends, and a local
backend on bubblewrap. Core layer: no Textual, and openenv/daytona are never imported here.

The names below are loaded when first asked for, so that a submodule (the registry, the local
backend) importing a sibling never runs this package's imports in a circle.
"""

from __future__ import annotations

from smoldata_tui.lazy_names import lazy_getattr

_HOMES = {
    "BubblewrapMissing": "errors",
    "NamespacesUnavailable": "errors",
    "PathOutsideSandbox": "errors",
    "ReadOnlyPath": "errors",
    "SandboxClosed": "errors",
    "SandboxError": "errors",
    "LocalSandbox": "local",
    "LocalSandboxBackend": "local",
    "default_base_dir": "local",
    "LocalBgJob": "commands",
    "TIMEOUT_EXIT_CODE": "protocol",
    "BgJob": "protocol",
    "ExecResult": "protocol",
    "FileTransfer": "protocol",
    "SandboxBackend": "protocol",
    "SandboxHandle": "protocol",
}

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES, globals())
