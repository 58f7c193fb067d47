"""Whole-file reads from a sandbox are capped on the host, on both backends: the agent writes the
files read whole (opencode_env's proxy trace, the answer), and a sparse file of any size costs it
nothing. Real bubblewrap, and the real Daytona SDK against the local server."""

from __future__ import annotations

import pytest

from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend, DaytonaSettings
from smoldata_tui.sandbox.errors import FileTooLarge
from smoldata_tui.sandbox.protocol import READ_TEXT_LIMIT

from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures

SPARSE = "truncate -s 1G /workdir/proxy_trace.jsonl"


def test_a_local_sandboxs_sparse_gigabyte_is_refused_not_read(sandbox):
    sandbox.write_text("/workdir/small.txt", "North\n")
    assert sandbox.read_text("/workdir/small.txt") == "North\n"
    assert sandbox.exec(SPARSE).exit_code == 0
    with pytest.raises(FileTooLarge) as raised:
        sandbox.read_text("/workdir/proxy_trace.jsonl")
    assert raised.value.size == 1 << 30 and raised.value.limit == READ_TEXT_LIMIT
    assert "1073741824 bytes, past the 64 MiB" in str(raised.value)


@pytest.fixture
def daytona_sandbox(local_daytona):
    handle = DaytonaSandboxBackend(DaytonaSettings(keepalive_s=0.5, retry_budget_s=30.0)).create(timeout_s=60)
    yield handle
    handle.kill()


def test_a_daytona_sandboxs_sparse_gigabyte_is_refused_before_it_crosses_the_network(daytona_sandbox, local_daytona):
    daytona_sandbox.write_text("/workdir/small.txt", "North\n")
    assert daytona_sandbox.read_text("/workdir/small.txt") == "North\n"
    assert daytona_sandbox.exec(SPARSE).exit_code == 0
    with pytest.raises(FileTooLarge):
        daytona_sandbox.read_text("/workdir/proxy_trace.jsonl")
    with pytest.raises(FileTooLarge):
        daytona_sandbox.read_bytes("/workdir/proxy_trace.jsonl")  # no limit given: the same cap
    assert daytona_sandbox.read_bytes("/workdir/proxy_trace.jsonl", 1 << 29, 4) == b"\0" * 4
    with pytest.raises(FileNotFoundError):
        daytona_sandbox.read_text("/workdir/absent.txt")
