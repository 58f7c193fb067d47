"""The ``local_daytona`` pytest fixture: a ``LocalDaytona`` per test, with the environment set so the
real SDK (``AsyncDaytona()`` without arguments) talks to it. Tests import it:
``from tests.daytona_local.fixtures import local_daytona``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from smoldata_tui.opencode.install import installed_binary
from tests.daytona_local.server import LocalDaytona

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def cached_opencode_bin_dir() -> Path | None:
    """The bin directory of the OpenCode the repo installs (tests/opencode_fixture.py), if present:
    never installed here, so tests that do not need OpenCode stay fast and offline."""
    binary = installed_binary()
    return binary.parent if binary.is_file() else None


def serve(server: LocalDaytona, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalDaytona]:
    """Start ``server`` with the environment set so the real SDK talks to it; stop it afterwards."""
    # The SDK's aiohttp session trusts the environment: a proxy would swallow requests to 127.0.0.1.
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    server.start()
    try:
        monkeypatch.setenv("DAYTONA_API_URL", server.api_url)
        monkeypatch.setenv("DAYTONA_API_KEY", server.api_key)
        monkeypatch.setenv("DAYTONA_TARGET", "local")
        yield server
    finally:
        server.stop()


@pytest.fixture
def local_daytona(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, standin_opencode: Path) -> Iterator[LocalDaytona]:
    """The server, its image holding the stand-in OpenCode (tests/standin_agent) where the real
    image holds OpenCode: tests through it are about our Daytona code, not about OpenCode
    (tests/test_standin_agent.py holds the stand-in to the real binary)."""
    yield from serve(LocalDaytona(opencode_bin_dir=standin_opencode.parent, sandbox_base_dir=tmp_path / "daytona-sandboxes"),
                     monkeypatch)  # fmt: skip


@pytest.fixture
def real_opencode_daytona(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opencode_bin: Path) -> Iterator[LocalDaytona]:
    """The server with the real OpenCode (``opencode_bin``'s) in its image: for tests about OpenCode
    itself, or about what runs it (opencode_env's own harness)."""
    yield from serve(LocalDaytona(opencode_bin_dir=opencode_bin.parent, sandbox_base_dir=tmp_path / "daytona-sandboxes"),
                     monkeypatch)  # fmt: skip
