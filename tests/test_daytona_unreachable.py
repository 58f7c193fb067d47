"""A Daytona API that cannot be reached fails the run at once, naming the URL (credentials masked),
instead of retrying a refused connection or an unknown host like a 503 until past ``--timeout``;
Ctrl-C during retries ends the run within 2 s; a rejected key says no sandbox may remain."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from .conftest import ROOT, SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture

TIMEOUT_S = 120


def closed_loopback_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released): a connect is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_command(tmp_path) -> list[str]:
    return [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--backend", "daytona",
            "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--save", str(tmp_path / "runs"),
            "--timeout", str(TIMEOUT_S), "--headless"]  # fmt: skip


def environment(**overrides: str) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": overrides.pop("cache"), **overrides}
    env.pop("SMOLDATA_TUI_DEBUG", None)
    return env


@pytest.mark.parametrize("where", ["closed-port", "unknown-host"])
def test_an_unreachable_api_fails_at_once_and_names_the_url(tmp_path, where):
    host = f"127.0.0.1:{closed_loopback_port()}" if where == "closed-port" else "daytona-api.invalid"  # RFC 6761
    url = f"http://{host}/api?token=hush"
    env = environment(DAYTONA_API_KEY="some-key", DAYTONA_API_URL=url, cache=str(tmp_path / "cache"))
    started = time.monotonic()
    done = subprocess.run(run_command(tmp_path), capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT, env=env)
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert elapsed < TIMEOUT_S / 3, f"{elapsed:.1f} s"  # the SDK's import takes seconds on a loaded machine
    last = done.stderr.strip().splitlines()[-1]
    why = "connection refused" if where == "closed-port" else "host not found"
    assert f"cannot reach the Daytona API at http://{host}/api?token=*** (DAYTONA_API_URL): {why}" in last, last
    assert "hush" not in done.stderr + done.stdout
    assert "retry" not in done.stderr and "may remain" not in done.stderr and "Traceback" not in done.stderr


def test_a_rejected_key_fails_without_saying_a_sandbox_may_remain(tmp_path, local_daytona):
    env = environment(DAYTONA_API_KEY="not-the-key", cache=str(tmp_path / "cache"))
    done = subprocess.run(run_command(tmp_path), capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT, env=env)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "creating the Daytona sandbox failed" in last and "Unauthorized" in last, last
    assert "may remain" not in done.stderr and "gc" not in last
    assert local_daytona.sandbox_ids() == []
    assert [status for method, path, status in local_daytona.requests if path == "/api/sandbox"] == [401]


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_during_create_retries_ends_the_run_within_seconds(tmp_path, local_daytona, how):
    # 500s on every control-plane call: the create may have happened, and the lookup for what it made fails too.
    local_daytona.fail_next(1000, 500, path_contains="/api/sandbox")
    env = environment(cache=str(tmp_path / "cache"))
    proc = subprocess.Popen(run_command(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env)  # fmt: skip
    lines: list[str] = []
    retrying = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if "server error (500) on create: retry 2" in line:
                retrying.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert retrying.wait(90), "".join(lines)
        signalled = time.monotonic()
        proc.send_signal(how)
        proc.wait(30)
        stopped_after = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
    # 0.4-0.5 s on an idle machine, 2.3 s once with two busy loops beside four test workers on 2 CPUs.
    # 5 s still fails a run whose retries go on after the signal (their budget is 120 s) or whose
    # cleanup after it is not held to its 1.5 s.
    assert stopped_after < 5.0, f"{stopped_after:.2f} s after the signal:\n" + "".join(lines)
    assert proc.returncode == (130 if how == signal.SIGINT else 1)
    time.sleep(0.2)  # the reader takes the last lines
    assert "creating the Daytona sandbox was cancelled" in "".join(lines) and "Traceback" not in "".join(lines)
    assert local_daytona.sandbox_ids() == []
