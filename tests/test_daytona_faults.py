"""Faults as the real SDK reports them, against the local Daytona server: a 503 on a file transfer
(a plain DaytonaError without a status code) is retried, a 429 is called rate limiting everywhere,
a command that may have run is reported as not repeated (not as 120 s of retries), and a sandbox
that is stopped and auto-deleted mid-call is reported as such."""

from __future__ import annotations

import asyncio

import pytest
from daytona import AsyncDaytona, CreateSandboxFromSnapshotParams, DaytonaError

from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend, DaytonaSettings, SandboxLost
from smoldata_tui.sandbox.daytona.retry import transient_reason
from smoldata_tui.sandbox.errors import SandboxError

from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture

FAST = dict(keepalive_s=0.5, retry_budget_s=30.0, create_timeout_s=60.0)


@pytest.fixture
def sandbox(local_daytona):
    handle = DaytonaSandboxBackend(DaytonaSettings(**FAST)).create(timeout_s=60, metadata={"run": "faults"})
    handle.said = []
    handle.notify = handle.said.append
    yield handle
    handle.kill()
    assert local_daytona.sandbox_ids() == []


def test_the_sdk_reports_a_503_on_a_download_without_a_status_code_and_it_counts_as_one(local_daytona):
    async def failed_download() -> BaseException:
        async with AsyncDaytona() as client:
            made = await client.create(CreateSandboxFromSnapshotParams(snapshot="s"))
            try:
                await made.fs.upload_file(b"42\n", "/workdir/answer.txt")
                local_daytona.fail_next(1, 503, path_contains="files/bulk-download")
                try:
                    await made.fs.download_file("/workdir/answer.txt")
                except DaytonaError as exc:
                    return exc
                raise AssertionError("the injected 503 did not fail the download")
            finally:
                await made.delete()

    error = asyncio.run(failed_download())
    assert type(error) is DaytonaError and error.status_code is None  # what the SDK 0.226 really raises
    assert transient_reason(error) == "server error (503)"


def test_file_transfers_are_retried_after_503_and_429_and_say_so(sandbox, local_daytona):
    sandbox.write_text("/workdir/answer.txt", "North\n")
    local_daytona.fail_next(1, 503, path_contains="files/bulk-download")
    assert sandbox.read_text("/workdir/answer.txt") == "North\n"
    local_daytona.fail_next(1, 429, path_contains="files/bulk-download")
    assert sandbox.read_text("/workdir/answer.txt") == "North\n"
    local_daytona.fail_next(1, 429, path_contains="files/bulk-upload")
    sandbox.write_text("/workdir/other.txt", "South\n")
    local_daytona.fail_next(1, 503, path_contains="files/bulk-upload")
    sandbox.write_text("/workdir/other.txt", "East\n")
    assert sandbox.read_text("/workdir/other.txt") == "East\n"
    retries = [message for message in sandbox.said if message.startswith("Daytona ")]
    assert any("server error (503) on downloading /workdir/answer.txt" in m for m in retries), retries
    assert any("rate limited (429) on downloading /workdir/answer.txt" in m for m in retries), retries
    assert any("rate limited (429) on uploading /workdir/other.txt" in m for m in retries), retries
    assert any("server error (503) on uploading /workdir/other.txt" in m for m in retries), retries
    assert not any("server error (429)" in m for m in retries), retries


def test_a_command_that_may_have_run_is_reported_as_not_repeated(sandbox, local_daytona):
    local_daytona.fail_next(1, 500, path_contains="process/execute")
    with pytest.raises(SandboxError) as raised:
        sandbox.exec("echo once >> /tmp/count", timeout=30)
    message = str(raised.value)
    assert "exec failed (server error (500)) and was not repeated: it may already have run" in message, message
    assert "gave up" not in message and "retries" not in message
    assert sandbox.said == []  # no retry was announced either


def test_retries_that_run_out_say_how_many_and_how_long(local_daytona):
    settings = DaytonaSettings(**{**FAST, "retry_budget_s": 2.0})
    sandbox = DaytonaSandboxBackend(settings).create(timeout_s=60, metadata={"run": "budget"})
    try:
        local_daytona.fail_next(100, 503, path_contains="process/execute")
        with pytest.raises(SandboxError) as raised:
            sandbox.exec("true", timeout=30)
        message = str(raised.value)
        assert "Daytona gave up on exec (server error (503)) after " in message and " retries in " in message, message
        assert "120 s" not in message
    finally:
        with local_daytona.faults.lock:
            local_daytona.faults.failures.clear()  # the rest of the 503s: deleting must go through
        sandbox.kill()


@pytest.mark.parametrize("call", ["exec", "download"])
def test_a_sandbox_stopped_and_auto_deleted_is_reported_as_such(sandbox, local_daytona, call):
    sandbox.write_text("/workdir/answer.txt", "x")
    local_daytona.auto_stop(sandbox.sandbox_id)  # inactivity auto-stop; auto_delete_interval=0 deletes it
    assert local_daytona.sandbox_ids() == []
    with pytest.raises(SandboxLost) as raised:
        if call == "exec":
            sandbox.exec("true", timeout=30)
        else:  # the SDK's bulk download reports the 404 as a bare DaytonaError
            sandbox.read_text("/workdir/answer.txt")
    assert f"Daytona sandbox {sandbox.sandbox_id} entered state 'destroyed'" in str(raised.value)
    assert "stopped and auto-deleted" in str(raised.value)


# Setup commands that are safe to run twice, each identified by a piece of its command line.
REPEATABLE_SETUP = {
    "probing for OpenCode": "command -v opencode",
    "chmod and --version of the uploaded OpenCode": "chmod 755 /root/.opencode/bin/opencode",
    "preparing the input folder": "rm -rf /tmp/smoldata-stage && mkdir -p",
    "counting the staged files": "-type f | wc -l",
}


def test_a_lost_answer_to_each_repeatable_setup_command_is_retried_and_the_episode_is_graded(tmp_path, local_daytona,
                                                                                           standin_opencode):
    from .test_daytona_episode import PASSING, messages, run_daytona

    # An image without OpenCode: it is uploaded, then made executable and asked its version. One
    # episode, the answer to each of the four commands lost once (one episode each would only
    # repeat the agent's run four times).
    settings = DaytonaSettings(image="docker.io/library/ubuntu:24.04", **FAST)
    for command in REPEATABLE_SETUP.values():
        local_daytona.drop_answer_next(1, path_contains="process/execute", body_contains=command)
    result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", tmp_path / "runs", settings=settings,
                                   opencode_bin=standin_opencode)  # the uploaded one: the stand-in, 50 kB
    assert result.error is None, result.error
    assert result.status == "finished" and result.grade.env_reward == 1.0
    retried = [m for m in messages(recorder) if "connection lost on exec: retry 1" in m]
    assert len(retried) == len(REPEATABLE_SETUP), messages(recorder)
    dropped = [path for _method, path, status in local_daytona.requests if status == 0]
    assert len(dropped) == len(REPEATABLE_SETUP) and all(path.endswith("/process/execute") for path in dropped), dropped
    with local_daytona.faults.lock:
        assert local_daytona.faults.failures == []  # every drop hit its command
    assert local_daytona.sandbox_ids() == []


def test_a_look_at_the_answer_killed_in_the_sandbox_is_asked_again_and_the_grade_kept(tmp_path, local_daytona):
    """A command killed in the sandbox answers with exit 137 and nothing printed. Whether the answer
    exists and how big it is were taken for "no" then: a written answer graded as missing (0.0),
    seen once in a suite run under load (bubblewrap's join race, since fixed, killed the look)."""
    from .test_daytona_episode import PASSING, messages, run_daytona

    local_daytona.kill_command_next(1, body_contains="test -e /workdir/answer.txt")
    local_daytona.kill_command_next(1, body_contains="stat -c %s /workdir/answer.txt")
    result, recorder = run_daytona("sales-top-region", f"replay:{PASSING}", tmp_path / "runs")
    assert result.error is None, result.error
    assert (result.status, result.grade.env_reward) == ("finished", 1.0), (result.grade, messages(recorder))
    asked_again = [m for m in messages(recorder) if "cut short a look at" in m]
    assert len(asked_again) == 2, messages(recorder)
    with local_daytona.faults.lock:
        assert local_daytona.faults.failures == []  # both kills hit their command
    assert local_daytona.sandbox_ids() == []
