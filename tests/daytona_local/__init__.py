"""A local stand-in for the Daytona service that the real ``daytona`` SDK talks to unmodified;
commands run for real in local bubblewrap sandboxes. See ``server.LocalDaytona``."""

from tests.daytona_local.server import LocalDaytona

__all__ = ["LocalDaytona"]
