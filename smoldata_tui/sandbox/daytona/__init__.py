"""The Daytona backend: the environment's own sandboxes, driven through the async ``daytona`` SDK.
The SDK is imported only when a sandbox is made or listed, never at import time."""

from smoldata_tui.sandbox.daytona.backend import DaytonaSandboxBackend, SandboxInfo
from smoldata_tui.sandbox.daytona.bg_job import DaytonaBgJob
from smoldata_tui.sandbox.daytona.handle import DaytonaSandbox, SandboxLost
from smoldata_tui.sandbox.daytona.settings import (
    DEFAULT_IMAGE,
    SNAPSHOT_ENV,
    DaytonaCredentialsMissing,
    DaytonaSettings,
    has_api_key,
    require_api_key,
)

__all__ = [
    "DEFAULT_IMAGE",
    "SNAPSHOT_ENV",
    "DaytonaBgJob",
    "DaytonaCredentialsMissing",
    "DaytonaSandbox",
    "DaytonaSandboxBackend",
    "DaytonaSettings",
    "SandboxInfo",
    "SandboxLost",
    "has_api_key",
    "require_api_key",
]
