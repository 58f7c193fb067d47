"""Fixtures and host-side probes shared by the sandbox tests (no tests here).

The sandbox tests run real bubblewrap: without ``bwrap`` they fail with the install instructions
(``apt-get install bubblewrap``), they are not skipped."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import pytest

from smoldata_tui.sandbox import LocalSandbox, LocalSandboxBackend

GRACE_S = 0.3  # short, so tests with processes that ignore SIGTERM stay fast


@pytest.fixture
def base_dir(tmp_path: Path) -> Path:
    return tmp_path / "sandboxes"


@pytest.fixture
def backend(base_dir: Path) -> LocalSandboxBackend:
    return LocalSandboxBackend(base_dir=base_dir, kill_grace_s=GRACE_S)


@pytest.fixture
def sandbox(backend: LocalSandboxBackend):
    with backend.create(metadata={"episode_id": "test"}) as sb:
        yield sb


def marker() -> str:
    """A unique `sleep` duration: `sleep <marker>` names this test's processes on the host."""
    return str(7_000_000 + secrets.randbelow(1_000_000))


def sleepers(mark: str) -> list[int]:
    """Host pids of the processes whose argv is exactly ``sleep <mark>``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")[:-1]
        except OSError:
            continue
        if len(argv) == 2 and os.path.basename(argv[0]) == b"sleep" and argv[1] == mark.encode():
            found.append(int(name))
    return found


def wait_for_sleepers(mark: str, count: int, timeout_s: float = 5) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while len(found := sleepers(mark)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(found) >= count, f"expected {count} `sleep {mark}` processes, found {found}"
    return found


def assert_fully_removed(sb: LocalSandbox) -> None:
    assert not sb.alive
    assert not sb.control_dir.exists()


def processes_matching(text: str) -> list[str]:
    """The command lines of the host's processes that contain ``text``."""
    return [cmdline for _pid, cmdline in _matching(text)]


def pids_matching(text: str) -> list[int]:
    """The pids of the host's processes whose command line contains ``text``."""
    return [pid for pid, _cmdline in _matching(text)]


def _matching(text: str) -> list[tuple[int, str]]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append((int(entry), cmdline))
    return found
