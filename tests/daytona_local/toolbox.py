"""Toolbox process routes (``{toolboxProxyUrl}/{sandboxId}/process/...``): one-shot commands and
sessions whose commands run in the background, with their logs as a snapshot or a WebSocket stream.

Each session command is its own background job (``LocalSandbox.start_bg``) run by a fresh bash, so
a session keeps no shell state (``cd``, ``export``) from one command to the next, unlike the daemon's
long-lived session shell; async commands of one session run concurrently instead of queueing.

As on the daemon, a session command's stdin is a pipe that is never closed (the daemon writes the
session's commands into its shell's stdin and keeps that pipe open): a command that reads stdin
until end of file waits forever unless it redirects its stdin. Here the pipe is a FIFO inside the
sandbox that the command's shell opens for reading and writing (so it never sees end of file).
"""

from __future__ import annotations

import asyncio
import shlex
import threading
import uuid
from typing import TYPE_CHECKING, Any

from aiohttp import web

from smoldata_tui.sandbox import TIMEOUT_EXIT_CODE, SandboxClosed
from tests.daytona_local.state import SOURCE_DAEMON, SOURCE_PROXY, ApiError, CommandRecord, SandboxRecord

if TYPE_CHECKING:
    from tests.daytona_local.server import LocalDaytona

STDOUT_PREFIX = b"\x01\x01\x01"  # the SDK's demultiplexer markers (daytona/common/process.py)
STDERR_PREFIX = b"\x02\x02\x02"
LOG_POLL_S = 0.02  # how often a followed log is checked for new output
LOG_CHUNK = 1 << 20  # bytes per frame at most; the SDK's WebSocket accepts 4 MiB messages
STDERR_DIR = "/run/daytona-local"  # inside the sandbox: session commands' stderr files and stdin pipes
_TIMED_OUT = "command killed after"  # LocalSandbox.exec's note when it killed a command at its timeout
HOME = "/root"


def add_routes(app: web.Application, server: LocalDaytona) -> None:
    process = Process(server)
    base = "/toolbox/{sandbox_id}"
    session = base + "/process/session/{session_id}"
    app.router.add_post(base + "/process/execute", process.execute)
    app.router.add_post(base + "/process/session", process.create_session)
    app.router.add_get(base + "/process/session", process.list_sessions)
    app.router.add_get(session, process.get_session)
    app.router.add_delete(session, process.delete_session)
    app.router.add_post(session + "/exec", process.session_exec)
    app.router.add_get(session + "/command/{command_id}", process.get_command)
    app.router.add_get(session + "/command/{command_id}/logs", process.command_logs)
    app.router.add_get(base + "/user-home-dir", process.home_dir)
    app.router.add_get(base + "/work-dir", process.home_dir)
    app.router.add_get(base + "/version", process.version)


def started_sandbox(server: LocalDaytona, request: web.Request) -> SandboxRecord:
    """The sandbox a toolbox call is for, answered the way Daytona's proxy does when it is missing
    (404 SANDBOX_NOT_FOUND) or not started (400 SANDBOX_NOT_STARTED, SDK: DaytonaBadRequestError)."""
    sandbox_id = request.match_info["sandbox_id"]
    record = server.state.find(sandbox_id)
    if record is None or record.id != sandbox_id:
        raise ApiError(404, f"sandbox {sandbox_id} not found", code="SANDBOX_NOT_FOUND", source=SOURCE_PROXY)
    if record.state != "started" or record.local is None or not record.local.alive:
        raise ApiError(400, "sandbox is not running — start the sandbox before accessing it",
                       code="SANDBOX_NOT_STARTED", source=SOURCE_PROXY)  # fmt: skip
    record.touch()  # the proxy counts toolbox traffic as activity
    return record


async def in_sandbox(server: LocalDaytona, record: SandboxRecord, function, *args: Any, **kwargs: Any) -> Any:
    """Run a blocking LocalSandbox call off the loop; a sandbox killed meanwhile is "not started"."""
    try:
        return await server.run_blocking(function, *args, **kwargs)
    except SandboxClosed:
        raise ApiError(400, "sandbox is not running — start the sandbox before accessing it",
                       code="SANDBOX_NOT_STARTED", source=SOURCE_PROXY) from None  # fmt: skip


class Process:
    def __init__(self, server: LocalDaytona) -> None:
        self.server = server

    async def execute(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        body = await request.json()
        command = body.get("command") or ""
        if not command.strip():
            raise ApiError(400, "empty command", source=SOURCE_DAEMON)
        timeout = body.get("timeout") or None  # the daemon: no timeout unless a positive one is given
        # The daemon runs the command with a shell and returns stdout and stderr interleaved.
        wrapped = f"bash -c {shlex.quote(command)} 2>&1"
        envs, cwd = body.get("envs") or None, body.get("cwd") or None
        result = await in_sandbox(self.server, record, record.local.exec, wrapped, envs=envs, cwd=cwd, timeout=timeout)
        if result.exit_code == TIMEOUT_EXIT_CODE and _TIMED_OUT in result.stderr:
            raise ApiError(408, f"Command execution timed out after {timeout} seconds. The timeout can be "
                           "increased by adjusting the timeout parameter in the request.",
                           code="PROCESS_EXECUTION_TIMEOUT", source=SOURCE_DAEMON)  # fmt: skip
        # What is left on stderr comes from bwrap itself (e.g. a missing cwd): the daemon reports a
        # failed start in the result too.
        return web.json_response({"exitCode": result.exit_code, "result": result.stdout + result.stderr})

    async def create_session(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        session_id = (await request.json()).get("sessionId") or ""
        if not session_id:
            raise ApiError(400, "sessionId is required", source=SOURCE_DAEMON)
        if session_id in record.sessions:
            raise ApiError(409, f"session {session_id} already exists", source=SOURCE_DAEMON)
        record.sessions[session_id] = {}
        return web.Response(status=201)

    async def list_sessions(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        return web.json_response([_session_json(sid, commands) for sid, commands in record.sessions.items()])

    async def get_session(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        session_id = request.match_info["session_id"]
        return web.json_response(_session_json(session_id, _session(record, session_id)))

    async def delete_session(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        session_id = request.match_info["session_id"]
        commands = _session(record, session_id)
        del record.sessions[session_id]
        # The daemon ends the session's shell, and with it whatever the session still runs.
        running = [command.job for command in commands.values() if command.exit_code is None]
        await asyncio.gather(*(self.server.run_blocking(job.kill) for job in running))
        return web.Response(status=204)

    async def session_exec(self, request: web.Request) -> web.Response:
        record = started_sandbox(self.server, request)
        commands = _session(record, request.match_info["session_id"])
        body = await request.json()
        command = body.get("command") or ""
        if not command.strip():
            raise ApiError(400, "command cannot be empty", source=SOURCE_DAEMON)
        command_id = str(uuid.uuid4())
        stderr_path = f"{STDERR_DIR}/{command_id}.stderr"
        stdin_pipe = f"{STDERR_DIR}/{command_id}.stdin"
        wrapped = (f"mkfifo {stdin_pipe} && exec 0<>{stdin_pipe} && rm -f {stdin_pipe} && "
                   f"bash -c {shlex.quote(command)} 2>>{stderr_path}")  # fmt: skip

        def start():
            record.local.write_bytes(stderr_path, b"")  # exists before the first read of the stream
            return record.local.start_bg(wrapped)

        job = await in_sandbox(self.server, record, start)
        entry = CommandRecord(command_id, command, job, stderr_path, asyncio.Event())
        commands[command_id] = entry
        _watch(asyncio.get_running_loop(), entry)
        if body.get("runAsync") or body.get("async"):
            return web.json_response({"cmdId": command_id}, status=202)
        await entry.done.wait()
        out, err = await self.server.run_blocking(read_output, record, entry, 0, 0, None)
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        return web.json_response({"cmdId": command_id, "output": stdout + stderr, "stdout": stdout,
                                  "stderr": stderr, "exitCode": entry.exit_code})  # fmt: skip

    async def get_command(self, request: web.Request) -> web.Response:
        return web.json_response(self._command(request)[1].to_json())

    async def command_logs(self, request: web.Request) -> web.StreamResponse:
        record, entry = self._command(request)
        if request.headers.get("Upgrade", "").lower() != "websocket":
            out, err = await self.server.run_blocking(read_output, record, entry, 0, 0, None)
            stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
            return web.json_response({"output": stdout + stderr, "stdout": stdout, "stderr": stderr})
        return await LogStream(self.server, record, entry, follow=request.query.get("follow") == "true").serve(request)

    async def home_dir(self, request: web.Request) -> web.Response:
        started_sandbox(self.server, request)
        return web.json_response({"dir": HOME})

    async def version(self, request: web.Request) -> web.Response:
        started_sandbox(self.server, request)
        return web.json_response({"version": "local"})

    def _command(self, request: web.Request) -> tuple[SandboxRecord, CommandRecord]:
        record = started_sandbox(self.server, request)
        commands = _session(record, request.match_info["session_id"])
        entry = commands.get(request.match_info["command_id"])
        if entry is None:
            raise ApiError(404, "command not found", source=SOURCE_DAEMON)
        return record, entry


class LogStream:
    """A command's output over a WebSocket, as the daemon streams it: binary frames, each a stream
    marker then bytes, from the start of the log (so a reconnect replays everything), new output as it
    is written, then a normal close (1000) once the command has exited and all of it was sent."""

    def __init__(self, server: LocalDaytona, record: SandboxRecord, entry: CommandRecord, *, follow: bool) -> None:
        self.server, self.record, self.entry, self.follow = server, record, entry, follow

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        transport = request.transport
        self.server.open_log_sockets.add(transport)  # drop_connections aborts these
        incoming = asyncio.create_task(_answer_pings(ws))
        try:
            await self._stream(ws)
            incoming.cancel()
            if not ws.closed:
                destroyed = not self.record.local.alive
                await ws.close(code=1011 if destroyed else 1000, message=b"sandbox destroyed" if destroyed else b"")
        except ConnectionError:  # the client went away, or drop_connections aborted us
            pass
        finally:
            incoming.cancel()
            self.server.open_log_sockets.discard(transport)
        return ws

    async def _stream(self, ws: web.WebSocketResponse) -> None:
        out_offset = err_offset = 0
        while not ws.closed:
            finished = self.entry.done.is_set()  # before reading: the last read sees all output
            out, err = await self.server.run_blocking(read_output, self.record, self.entry,
                                                      out_offset, err_offset, LOG_CHUNK)  # fmt: skip
            out_offset, err_offset = out_offset + len(out), err_offset + len(err)
            for marker, data in ((STDOUT_PREFIX, out), (STDERR_PREFIX, err)):
                if data and not ws.closed:
                    await ws.send_bytes(marker + data)
                    self.server.state.count_bytes(self.record.id, len(marker) + len(data))
            if len(out) == LOG_CHUNK or len(err) == LOG_CHUNK:
                continue  # more is waiting: send it before sleeping
            if finished or not self.follow:
                return
            try:
                await asyncio.wait_for(self.entry.done.wait(), LOG_POLL_S)
            except TimeoutError:
                pass


async def _answer_pings(ws: web.WebSocketResponse) -> None:
    """Read what the client sends: aiohttp answers its heartbeat pings only while someone reads."""
    async for _message in ws:
        pass


def read_output(record: SandboxRecord, entry: CommandRecord, out_offset: int, err_offset: int,
                limit: int | None) -> tuple[bytes, bytes]:  # fmt: skip
    """New stdout (the job's log file on the host) and stderr (a file in the sandbox) from the given
    offsets. Once the sandbox is gone both are empty: its files went with it."""
    try:
        with open(entry.job.log_path, "rb") as log:
            log.seek(out_offset)
            out = log.read(-1 if limit is None else limit)
    except FileNotFoundError:
        out = b""
    try:
        err = record.local.read_bytes(entry.stderr_path, err_offset, limit)
    except (SandboxClosed, OSError):
        err = b""
    return out, err


def _watch(loop: asyncio.AbstractEventLoop, entry: CommandRecord) -> None:
    """Wait for the job on a thread of its own (it may run for an hour: no pool thread is held)."""

    def wait() -> None:
        try:
            code = entry.job.wait()
        except OSError:  # its pidfds were released by a concurrent kill: the job is over
            code = -1
        try:
            loop.call_soon_threadsafe(entry.finish, code)
        except RuntimeError:  # the loop is closed: the server stopped
            pass

    threading.Thread(target=wait, name=f"daytona-local-cmd-{entry.id[:8]}", daemon=True).start()


def _session(record: SandboxRecord, session_id: str) -> dict[str, CommandRecord]:
    commands = record.sessions.get(session_id)
    if commands is None:
        raise ApiError(404, "session not found", source=SOURCE_DAEMON)
    return commands


def _session_json(session_id: str, commands: dict[str, CommandRecord]) -> dict[str, Any]:
    return {"sessionId": session_id, "commands": [command.to_json() for command in commands.values()]}
