"""The local Daytona server (tests/daytona_local) against the REAL daytona SDK, unmodified: what the
episode pipeline relies on works, and each injected fault surfaces as the SDK's own exception."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest
from daytona import (
    AsyncDaytona,
    CreateSandboxFromImageParams,
    CreateSandboxFromSnapshotParams,
    DaytonaAuthenticationError,
    DaytonaBadRequestError,
    DaytonaConfig,
    DaytonaConflictError,
    DaytonaConnectionError,
    DaytonaError,
    DaytonaFileNotFoundError,
    DaytonaNotFoundError,
    DaytonaRateLimitError,
    DaytonaServiceUnavailableError,
    DaytonaTimeoutError,
    FileUpload,
    ListSandboxesQuery,
    Resources,
    SandboxState,
    SessionExecuteRequest,
)

from tests.daytona_local import LocalDaytona
from tests.daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture

IMAGE = "docker.io/savatar101/env-data-agent-train:base"
LABELS = {"app": "smoldata-tui-test", "run": "r1"}


def client(server: LocalDaytona, api_key: str | None = None) -> AsyncDaytona:
    return AsyncDaytona(DaytonaConfig(api_key=api_key or server.api_key, api_url=server.api_url, target="local"))


async def create(daytona: AsyncDaytona, name: str, **params):
    return await daytona.create(CreateSandboxFromImageParams(image=IMAGE, name=name, labels=dict(LABELS), **params),
                                timeout=30)  # fmt: skip


def local_dirs(server: LocalDaytona) -> list[str]:
    base = server.sandbox_base_dir
    return sorted(path.name for path in base.iterdir()) if base.exists() else []


async def test_create_from_image_and_snapshot_with_labels_then_get_by_name(local_daytona):
    async with client(local_daytona) as daytona:
        from_image = await create(daytona, "img-1", resources=Resources(cpu=2, memory=4, disk=10),
                                  env_vars={"GREETING": "hi"}, auto_stop_interval=0, ttl_minutes=30)  # fmt: skip
        snapshot_params = CreateSandboxFromSnapshotParams(snapshot="env-snap", name="snap-1", labels=dict(LABELS))
        from_snapshot = await daytona.create(snapshot_params, timeout=30)
        assert from_image.state == SandboxState.STARTED
        params = local_daytona.create_params(from_image.id)
        # The SDK sends a string image as a one-line Dockerfile, never as a field of its own.
        assert params["buildInfo"]["dockerfileContent"] == f"FROM {IMAGE}\n"
        assert params["labels"] == {**LABELS, "code-toolbox-language": "python"}
        assert (params["cpu"], params["memory"], params["disk"]) == (2, 4, 10)
        assert (params["autoStopInterval"], params["ttlMinutes"], params["env"]) == (0, 30, {"GREETING": "hi"})
        assert local_daytona.create_params(from_snapshot.id)["snapshot"] == "env-snap"
        record = local_daytona.sandbox_json(from_image.id)
        assert (record["name"], record["autoStopInterval"], record["cpu"], record["state"]) == (
            "img-1",
            0,
            2,
            "started",
        )
        assert "autoDestroyAt" in record

        found = await daytona.get("img-1")
        assert found.id == from_image.id and found.labels["run"] == "r1"
        assert (await found.process.exec("echo $GREETING")).result == "hi\n"
        if local_daytona.opencode_bin_dir is not None:  # bound only where the image would have it
            for sandbox in (from_image, from_snapshot):
                assert (await sandbox.process.exec("test -x /root/.opencode/bin/opencode")).exit_code == 0
        with pytest.raises(DaytonaConflictError):
            await create(daytona, "img-1")
        for sandbox in (from_image, from_snapshot):
            await sandbox.delete()
    assert local_daytona.sandbox_ids() == []


async def test_list_by_labels_returns_only_matching_sandboxes(local_daytona):
    async with AsyncDaytona() as daytona:  # configured by the fixture's DAYTONA_* variables alone
        mine = [await create(daytona, f"mine-{i}") for i in range(3)]
        other = await daytona.create(
            CreateSandboxFromImageParams(image="debian:12", labels={"app": "other"}), timeout=30
        )
        query = ListSandboxesQuery(labels={"run": "r1"}, limit=2)  # two pages: the cursor is followed
        listed = [sandbox.id async for sandbox in daytona.list(query)]
        assert sorted(listed) == sorted(sandbox.id for sandbox in mine)
        if local_daytona.opencode_bin_dir is not None:  # an image without OpenCode gets none
            assert (await other.process.exec("test -e /root/.opencode/bin/opencode")).exit_code != 0
        for sandbox in [*mine, other]:
            await sandbox.delete()
    assert local_daytona.sandbox_ids() == []


async def test_exec_returns_exit_code_and_combined_output_in_cwd_with_env(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "exec")
        response = await sandbox.process.exec("echo out; echo err >&2; pwd; echo $FOO; exit 7",
                                              cwd="/workdir", env={"FOO": "bar"})  # fmt: skip
        assert response.exit_code == 7
        assert response.result == "out\nerr\n/workdir\nbar\n"
        started = time.monotonic()
        with pytest.raises(DaytonaTimeoutError):  # the daemon's 408 PROCESS_EXECUTION_TIMEOUT
            await sandbox.process.exec("sleep 20", timeout=1)
        assert time.monotonic() - started < 10
        await sandbox.delete()


async def test_session_command_streams_output_while_it_runs(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "session")
        await sandbox.process.create_session("run")
        script = "for i in 1 2 3 4 5; do echo line$i; sleep 0.25; done; echo oops >&2"
        started = await sandbox.process.execute_session_command(
            "run", SessionExecuteRequest(command=script, run_async=True)
        )
        assert (await sandbox.process.get_session_command("run", started.cmd_id)).exit_code is None
        chunks: list[tuple[float, str]] = []
        errors: list[str] = []
        await sandbox.process.get_session_command_logs_async(
            "run", started.cmd_id, lambda text: chunks.append((time.monotonic(), text)), errors.append
        )
        assert "".join(text for _, text in chunks) == "".join(f"line{i}\n" for i in range(1, 6))
        assert "".join(errors) == "oops\n"
        assert len(chunks) >= 3 and chunks[-1][0] - chunks[0][0] > 0.5  # delivered as written, not at the end
        assert (await sandbox.process.get_session_command("run", started.cmd_id)).exit_code == 0
        logs = await sandbox.process.get_session_command_logs("run", started.cmd_id)
        assert logs.stdout.count("line") == 5 and logs.stderr == "oops\n"
        synchronous = await sandbox.process.execute_session_command(
            "run", SessionExecuteRequest(command="echo done; exit 3")
        )
        assert (synchronous.exit_code, synchronous.stdout) == (3, "done\n")
        await sandbox.delete()


async def test_a_session_commands_stdin_stays_open_as_on_the_daemon(local_daytona):
    """The daemon feeds a session command's stdin from a pipe it never closes: reading stdin to the
    end waits forever; the same command with stdin from /dev/null ends."""
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "stdin")
        await sandbox.process.create_session("s")
        reads = await sandbox.process.execute_session_command(
            "s", SessionExecuteRequest(command="test -p /dev/stdin && echo pipe; cat; echo eof", run_async=True))
        redirected = await sandbox.process.execute_session_command(
            "s", SessionExecuteRequest(command="cat </dev/null; echo eof", run_async=True))
        deadline = time.monotonic() + 30
        while (await sandbox.process.get_session_command("s", redirected.cmd_id)).exit_code is None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        assert (await sandbox.process.get_session_command("s", reads.cmd_id)).exit_code is None  # still reading
        assert (await sandbox.process.get_session_command_logs("s", reads.cmd_id)).stdout == "pipe\n"
        await sandbox.process.delete_session("s")
        await sandbox.delete()


async def test_upload_download_and_info_of_binary_files(local_daytona):
    payload = bytes(range(256)) + b"\xff\xfe not utf-8 \x80"
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "files")
        await sandbox.fs.upload_files([FileUpload(payload, "/home/user/input/data.bin"),
                                       FileUpload(b"text\n", "/workdir/sub/dir/note.txt")])  # fmt: skip
        assert await sandbox.fs.download_file("/home/user/input/data.bin") == payload
        assert await sandbox.fs.download_file("/workdir/sub/dir/note.txt") == b"text\n"
        info = await sandbox.fs.get_file_info("/home/user/input/data.bin")
        assert (info.size, info.is_dir, info.name) == (len(payload), False, "data.bin")
        assert (await sandbox.fs.get_file_info("/workdir/sub")).is_dir
        assert [entry.name for entry in await sandbox.fs.list_files("/workdir/sub/dir")] == ["note.txt"]
        with pytest.raises(DaytonaFileNotFoundError):
            await sandbox.fs.download_file("/workdir/missing.txt")
        with pytest.raises(DaytonaFileNotFoundError):
            await sandbox.fs.get_file_info("/workdir/missing.txt")
        assert local_daytona.bytes_sent(sandbox.id) > len(payload)
        await sandbox.delete()


async def test_injected_status_codes_raise_the_sdk_classes_once(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "faults")
        local_daytona.fail_next(1, 429)
        with pytest.raises(DaytonaRateLimitError):
            await daytona.get(sandbox.id)
        assert (await daytona.get(sandbox.id)).id == sandbox.id
        local_daytona.fail_next(1, 503, path_contains="/process/execute", method="POST")
        with pytest.raises(DaytonaServiceUnavailableError):
            await sandbox.process.exec("touch /tmp/ran")
        assert (await sandbox.process.exec("test -e /tmp/ran")).exit_code == 1  # the failed call never ran
        statuses = [status for _method, path, status in local_daytona.requests if "/socket.io" not in path]
        assert 429 in statuses and 503 in statuses
        await sandbox.delete()


async def test_dropped_connections_break_streams_and_calls_then_recover(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "drops")
        await sandbox.process.create_session("run")
        command = "for i in $(seq 30); do echo tick$i; sleep 0.1; done"
        started = await sandbox.process.execute_session_command(
            "run", SessionExecuteRequest(command=command, run_async=True)
        )
        received: list[str] = []
        stream = asyncio.create_task(
            sandbox.process.get_session_command_logs_async("run", started.cmd_id, received.append, received.append)
        )
        while not received:
            await asyncio.sleep(0.02)
        local_daytona.drop_connections(1.5)
        with pytest.raises(DaytonaError, match="1006"):
            await stream
        with pytest.raises(DaytonaConnectionError):
            await sandbox.process.get_session_command("run", started.cmd_id)
        await asyncio.sleep(1.6)
        # The command kept running; a new stream replays the whole log from the start.
        replayed: list[str] = []
        await sandbox.process.get_session_command_logs_async("run", started.cmd_id, replayed.append, replayed.append)
        assert "".join(replayed).splitlines() == [f"tick{i}" for i in range(1, 31)]
        assert (await sandbox.process.get_session_command("run", started.cmd_id)).exit_code == 0
        await sandbox.delete()


async def test_error_state_shows_on_get_and_refuses_toolbox_calls(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "broken")
        local_daytona.set_state(sandbox.id, "error", reason="runner lost")
        await sandbox.refresh_data()
        assert (sandbox.state, sandbox.error_reason) == (SandboxState.ERROR, "runner lost")
        with pytest.raises(DaytonaBadRequestError) as refused:  # the proxy's 400 SANDBOX_NOT_STARTED
            await sandbox.process.exec("true")
        assert (refused.value.status_code, refused.value.code) == (400, "SANDBOX_NOT_STARTED")
        await sandbox.delete()
    assert local_daytona.sandbox_ids() == [] and local_dirs(local_daytona) == []


async def test_create_timeout_leaves_a_sandbox_that_can_be_found_and_deleted(local_daytona):
    local_daytona.create_delay(2.5)
    async with client(local_daytona) as daytona:
        with pytest.raises(DaytonaTimeoutError):
            await daytona.create(CreateSandboxFromImageParams(image=IMAGE, name="slow", labels=dict(LABELS)), timeout=1)
        local_daytona.create_delay(0)
        leftovers = [sandbox async for sandbox in daytona.list(ListSandboxesQuery(labels=LABELS))]
        assert [sandbox.name for sandbox in leftovers] == ["slow"]
        await leftovers[0].delete()
    assert local_daytona.sandbox_ids() == []


async def test_delete_removes_the_sandbox_and_its_local_directory(local_daytona):
    async with client(local_daytona) as daytona:
        sandbox = await create(daytona, "doomed")
        await sandbox.process.create_session("bg")
        await sandbox.process.execute_session_command("bg", SessionExecuteRequest(command="sleep 60", run_async=True))
        assert len(local_dirs(local_daytona)) == 1
        await sandbox.delete()
        with pytest.raises(DaytonaNotFoundError):
            await daytona.get(sandbox.id)
    assert local_dirs(local_daytona) == []


async def test_stop_kills_every_sandbox_left_behind(local_daytona):
    async with client(local_daytona) as daytona:
        for name in ("left-1", "left-2"):
            sandbox = await create(daytona, name)
            await sandbox.process.create_session("bg")
            await sandbox.process.execute_session_command(
                "bg", SessionExecuteRequest(command="sleep 60", run_async=True)
            )
    locals_ = [local_daytona.local_sandbox(sandbox_id) for sandbox_id in local_daytona.sandbox_ids()]
    local_daytona.stop()
    assert len(locals_) == 2 and not any(local.alive for local in locals_)
    assert local_dirs(local_daytona) == []
    local_daytona.stop()  # idempotent


async def test_requests_without_the_api_key_are_refused(local_daytona):
    with pytest.raises(urllib.error.HTTPError) as refused:
        await asyncio.to_thread(urllib.request.urlopen, local_daytona.api_url + "/sandbox", timeout=5)
    assert refused.value.code == 401
    assert json.loads(refused.value.read())["statusCode"] == 401
    async with client(local_daytona, api_key="wrong-key") as daytona:
        with pytest.raises(DaytonaAuthenticationError):
            await daytona.get("anything")
    assert (("GET", "/api/sandbox", 401)) in local_daytona.requests


async def test_first_create_from_an_image_streams_its_build_log_then_the_build_is_cached(local_daytona):
    lines = ["#1 FROM debian:12", "#2 RUN apt-get install -y python3", "#3 exporting layers", "#4 DONE"]
    local_daytona.build_image_on_create(2.0, lines)
    received: list[tuple[float, str]] = []
    async with client(local_daytona) as daytona:
        started = time.monotonic()
        built = await daytona.create(CreateSandboxFromImageParams(image="debian:12", name="built"), timeout=30,
                                     on_snapshot_create_logs=lambda text: received.append((time.monotonic(), text)))  # fmt: skip
        assert time.monotonic() - started >= 2.0
        assert built.state == SandboxState.STARTED
        assert (await built.process.exec("echo up")).result == "up\n"  # really created by then
        # The SDK hands over each chunk as it arrives: lines logged before it connected come together.
        assert "\n".join(text for _, text in received).split("\n") == lines
        assert local_daytona.image_builds() == ["debian:12"]
        assert ("GET", f"/sandboxes/{built.id}/build-logs", 200) in local_daytona.requests

        later: list[str] = []
        cached = await daytona.create(CreateSandboxFromImageParams(image="debian:12", name="cached"), timeout=30,
                                      on_snapshot_create_logs=later.append)  # fmt: skip
        assert cached.state == SandboxState.STARTED and later == []
        assert local_daytona.image_builds() == ["debian:12"]  # not built again
        snapshot = await daytona.create(CreateSandboxFromSnapshotParams(snapshot="env-snap", name="snap"), timeout=30)
        assert snapshot.state == SandboxState.STARTED
        assert local_daytona.image_builds() == ["debian:12"]
        assert not any(f"/sandboxes/{cached.id}/" in path for _method, path, _status in local_daytona.requests)
        for sandbox in (built, cached, snapshot):
            await sandbox.delete()
    assert local_daytona.sandbox_ids() == []


async def test_stop_during_a_build_leaves_no_local_sandbox(local_daytona):
    local_daytona.build_image_on_create(30.0, ["#1 slow"])
    async with client(local_daytona) as daytona:
        creating = asyncio.create_task(
            daytona.create(CreateSandboxFromImageParams(image="debian:12", name="building"), timeout=60)
        )
        while not local_daytona.sandbox_ids() or not local_dirs(local_daytona):
            await asyncio.sleep(0.05)
        (sandbox_id,) = local_daytona.sandbox_ids()
        assert local_daytona.sandbox_json(sandbox_id)["state"] == "building_snapshot"
        creating.cancel()
        with pytest.raises(asyncio.CancelledError):
            await creating
    local_daytona.stop()
    assert local_dirs(local_daytona) == []
