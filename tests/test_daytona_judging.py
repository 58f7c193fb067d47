"""A sample task end to end through the command line, against a Daytona server that behaves as
Daytona's daemon does (a session command's stdin is a pipe never closed): exit 0, grade 1.0, the
seed's verdict, no sandbox left; and again with HTTP 503 on the first request of each kind and on
every third toolbox request (commands, sessions, uploads). A run downloads nothing: the answer and
the export are read through commands (bounded in the sandbox); a 503 on a download is
tests/test_daytona_faults.py's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
import sys

import pytest

from smoldata_tui.trace.seed_rule import seed_outcome

from .conftest import ROOT, SAMPLES
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture

PASSING = SAMPLES / "clean_pass.jsonl"


def headless_run(tmp_path, standin_opencode: Path) -> tuple[subprocess.CompletedProcess, dict]:
    command = [sys.executable, "-m", "smoldata_tui", "run", "--task", "sales-top-region", "--backend", "daytona",
               "--model", f"replay:{PASSING}", "--save", str(tmp_path / "runs"), "--timeout", "300", "--headless"]
    env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    # The image's OpenCode is the stand-in (local_daytona); the host's OpenCode cache holds it too.
    (tmp_path / "cache" / "smoldata-tui").mkdir(parents=True)
    (tmp_path / "cache" / "smoldata-tui" / "opencode").symlink_to(standin_opencode.parents[2])
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    return done, summary


def assert_judged_correct(done: subprocess.CompletedProcess, summary: dict, local_daytona) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary["status"] == "finished" and summary["grade"]["env_reward"] == 1.0, summary
    trace = open(summary["trace"], "rb").read()
    assert summary["native_tool_calls"] == seed_outcome(trace).calls == seed_outcome(PASSING.read_bytes()).calls == 3
    assert local_daytona.sandbox_ids() == []
    # No crash of ours: a replay's divergence lines may quote the agent's own tracebacks.
    assert not any(line.startswith("Traceback") for line in done.stderr.splitlines()), done.stderr[-3000:]


def test_a_sample_task_end_to_end_on_a_daemon_like_server(tmp_path, local_daytona, standin_opencode):
    done, summary = headless_run(tmp_path, standin_opencode)
    assert_judged_correct(done, summary, local_daytona)


def test_the_same_with_503_on_the_first_request_of_each_kind_and_every_third_toolbox_request(tmp_path, local_daytona,
                                                                                               standin_opencode):
    local_daytona.fail_first_of_each_kind(503)
    local_daytona.fail_every(3, 503, path_contains="/toolbox/")
    done, summary = headless_run(tmp_path, standin_opencode)
    assert_judged_correct(done, summary, local_daytona)
    failed = {(method, path) for method, path, status in local_daytona.requests if status == 503}
    for kind in ("files/bulk-upload", "process/execute", "process/session"):
        assert any(kind in path for _, path in failed), (kind, sorted(failed))
    assert any(method == "POST" and path == "/api/sandbox" for method, path in failed)
    assert "server error (503)" in done.stderr
