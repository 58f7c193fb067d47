"""The Daytona backend: the environment's own sandboxes, driven through the async ``daytona`` SDK.
The SDK is imported only when a sandbox is made or listed, never at import time; the names below
load their submodule when first asked for, so the submodules never import this package in a circle."""

from __future__ import annotations

from smoldata_tui.lazy_names import lazy_getattr

_HOMES = {
    "DaytonaSandboxBackend": "backend",
    "SandboxInfo": "backend",
    "DaytonaBgJob": "bg_job",
    "DaytonaSandbox": "handle",
    "SandboxLost": "handle",
    "DEFAULT_IMAGE": "settings",
    "SNAPSHOT_ENV": "settings",
    "DaytonaCredentialsMissing": "settings",
    "DaytonaSettings": "settings",
    "has_api_key": "settings",
    "require_api_key": "settings",
}

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES, globals())
