"""A Daytona sandbox behind the sandbox protocol (plus byte-level reads for following the log).

Every SDK call runs on the private loop of :mod:`bridge` and goes through :func:`retry.retrying`;
a call that fails for good checks the sandbox's state, so a sandbox that entered an error state is
reported as such instead of as a puzzling request failure. Background commands are
:class:`bg_job.DaytonaBgJob`'s.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from smoldata_tui.sandbox.daytona import shell
from smoldata_tui.sandbox.daytona.bg_job import KILLED_EXIT_CODE, DaytonaBgJob
from smoldata_tui.sandbox.daytona.bridge import Cancelled, LoopThread
from smoldata_tui.sandbox.daytona.retry import failure_message, retrying, transient_reason
from smoldata_tui.sandbox.daytona.settings import DaytonaSettings
from smoldata_tui.sandbox.errors import FileTooLarge, SandboxClosed, SandboxError
from smoldata_tui.sandbox.protocol import MAX_CAPTURE, READ_TEXT_LIMIT, TIMEOUT_EXIT_CODE, ExecResult

T = TypeVar("T")
_log = logging.getLogger(__name__)
GOOD_STATES = frozenset({"started", "starting"})
MAX_APPENDED = 4 << 20
GARBLED_READS = 3  # tries of a log read (or a look) whose reply is not what its script prints
# Past the retry deadline (--timeout ran out: recovering calls and grading), what a call may still
# spend on retries: the episode's grading floor, no more.
LATE_RETRY_BUDGET_S = 30.0
READ_PIECE = 16 << 20  # its base64 fits the MAX_CAPTURE exec keeps


class SandboxLost(SandboxError):
    """The Daytona sandbox left the started state (error, stopped, deleted) while in use."""


class DaytonaSandbox:
    def __init__(self, bridge: LoopThread, client: Any, sandbox: Any, settings: DaytonaSettings,
                 *, on_close: Callable[[DaytonaSandbox], None] | None = None,
                 retry_deadline: float | None = None) -> None:  # fmt: skip
        self._bridge = bridge
        self.retry_deadline = retry_deadline  # time.monotonic() when the episode's --timeout runs out
        self._client = client
        self._sandbox = sandbox
        self._settings = settings
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()
        self._keepalive: asyncio.Future | None = None
        self.notify: Callable[[str], None] = lambda message: _log.info("%s", message)
        self.interrupt = threading.Event()  # set: waits on the agent's log and exit return early
        self.wire_bytes = 0  # bytes of command output received while following logs
        self.log_bytes = 0  # of which log bytes, decoded

    # --- identity and lifetime --------------------------------------------------------------
    @property
    def sandbox_id(self) -> str:
        return self._sandbox.id

    @property
    def name(self) -> str:
        return self._sandbox.name

    @property
    def resources(self) -> dict[str, object]:
        """What Daytona gave the sandbox, as it reported it at creation: cpu, memory and disk (GiB),
        target (region), and the snapshot or image it was made from."""
        got = {key: getattr(self._sandbox, key, None) for key in ("cpu", "memory", "disk", "target")}
        record: dict[str, object] = {"cpu": got["cpu"], "memory_gib": got["memory"], "disk_gib": got["disk"],
                                     "target": got["target"]}  # fmt: skip
        snapshot = getattr(self._sandbox, "snapshot", None)
        if snapshot:
            record["snapshot"] = snapshot
        else:  # a string image arrives as a one-line Dockerfile: "FROM <image>"
            dockerfile = getattr(getattr(self._sandbox, "build_info", None), "dockerfile_content", None) or ""
            images = [line.split()[1] for line in dockerfile.splitlines() if line.upper().startswith("FROM ") and len(line.split()) > 1]
            record["image"] = images[0] if images else None
        return {key: value for key, value in record.items() if value is not None and value != ""}

    def start_keepalive(self) -> None:
        self._keepalive = asyncio.run_coroutine_threadsafe(self._keep_alive(), self._bridge.loop)

    async def _keep_alive(self) -> None:
        """Tell Daytona the sandbox is in use, so inactivity auto-stop never hits a watched run."""
        while True:
            await asyncio.sleep(self._settings.keepalive_s)
            try:
                await self._sandbox.refresh_activity()
            except Exception as exc:  # noqa: BLE001 - the next call's retries will report it
                _log.debug("keep-alive failed: %s", exc)

    def kill(self) -> None:
        """Delete the sandbox (every process in it ends). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._keepalive is not None:
            self._keepalive.cancel()
        try:
            self._run("deleting the sandbox", lambda: self._delete(), guard=False)
        except SandboxError as exc:
            raise SandboxError(f"{exc}; sandbox {self.sandbox_id} may remain: `smoldata-tui daytona gc` deletes it") from exc
        finally:
            if self._on_close is not None:
                self._on_close(self)

    async def _delete(self) -> None:
        from daytona import DaytonaNotFoundError

        try:
            await self._sandbox.delete()
        except DaytonaNotFoundError:
            pass  # already gone (auto-deleted, or deleted by gc): what we wanted

    def state(self) -> tuple[str, str]:
        """(state, reason) as Daytona reports them now."""
        self._run("reading the sandbox state", lambda: self._sandbox.refresh_data(), guard=False)
        return _state_of(self._sandbox)

    # --- the protocol -----------------------------------------------------------------------
    def exec(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None,
             timeout: float | None = 60) -> ExecResult:  # fmt: skip
        """The protocol's exec. A command may not be safe to run twice (``base64 -d x > y && rm x``),
        so after a failure that leaves unknown whether it ran (500, 504, a lost connection) it is
        not repeated: the failure is reported. 429, 502 and 503 (nothing ran) are retried."""
        return self._exec(cmd, envs=envs, cwd=cwd, timeout=timeout, repeatable=False)

    def exec_repeatable(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None,
                        timeout: float | None = 60) -> ExecResult:  # fmt: skip
        """``exec`` for a command that is safe to run twice (a read such as ``opencode export``):
        retried after any transient failure, lost connections and 500/504 included."""
        return self._exec(cmd, envs=envs, cwd=cwd, timeout=timeout, repeatable=True)

    def _exec(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None,
              timeout: float | None = 60, repeatable: bool = True) -> ExecResult:  # fmt: skip
        from daytona import DaytonaTimeoutError

        script = shell.exec_script(cmd, envs=envs, cwd=cwd, timeout=timeout)
        # Daytona's own limit only backs up timeout(1) inside the sandbox, which keeps the output.
        server_limit = None if timeout is None else int(timeout) + 30
        started = time.monotonic()
        try:
            reply = self._run("exec", lambda: self._sandbox.process.exec(script.command, timeout=server_limit),
                              repeatable=repeatable)  # fmt: skip
        except SandboxError as exc:
            cause = exc.__cause__
            if isinstance(cause, DaytonaTimeoutError) and getattr(cause, "status_code", None) != 504:
                return ExecResult(TIMEOUT_EXIT_CODE, "", f"timed out after {timeout:g} s")
            raise
        parsed = script.parse(reply.result or "")
        if parsed is None:  # the wrapper itself did not run (no bash in the image?)
            return ExecResult(reply.exit_code if reply.exit_code is not None else 1, "", (reply.result or "")[:MAX_CAPTURE])
        code, stdout, stderr = parsed
        stdout, stderr = stdout[:MAX_CAPTURE], stderr[:MAX_CAPTURE]  # as the local backend keeps them
        if timeout is not None and code == KILLED_EXIT_CODE and time.monotonic() - started >= timeout:
            code = TIMEOUT_EXIT_CODE  # it ignored timeout(1)'s TERM and got its KILL: still a timeout
        return ExecResult(code, stdout, stderr)

    def start_bg(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None) -> DaytonaBgJob:
        from daytona import SessionExecuteRequest

        job_id = f"job-{secrets.token_hex(6)}"
        process = self._sandbox.process
        async def session_exists():  # after a 5xx the session may exist: creating it again would fail
            return True if await process.get_session(job_id) else None

        self._run("creating a session", lambda: process.create_session(job_id), recover=session_exists)
        request = SessionExecuteRequest(command=shell.job_command(job_id, cmd, envs=envs, cwd=cwd), run_async=True)

        async def already_started():  # a 5xx may hide a command that did start: never start it twice
            session = await process.get_session(job_id)
            commands = getattr(session, "commands", None) or []
            return commands[0] if commands else None

        started = self._run("starting the agent", lambda: process.execute_session_command(job_id, request),
                            recover=already_started)  # fmt: skip
        command_id = getattr(started, "cmd_id", None) or getattr(started, "id", None)
        return DaytonaBgJob(self, job_id, command_id)

    def write_text(self, path: str, content: str) -> None:
        self.write_bytes(path, content.encode("utf-8"))

    def write_bytes(self, path: str, data: bytes) -> None:
        self._check(self._exec(shell.make_parent(path), timeout=60), f"creating the folder of {path}")
        self._run(f"uploading {path}", lambda: self._sandbox.fs.upload_file(data, path))

    def upload_file(self, local_path, path: str) -> None:
        """A host file, streamed from disk (OpenCode's binary is ~185 MB)."""
        self._check(self._exec(shell.make_parent(path), timeout=60), f"creating the folder of {path}")
        self._run(f"uploading {path}", lambda: self._sandbox.fs.upload_file(str(local_path), path))

    def read_text(self, path: str) -> str:
        return self.download(path).decode("utf-8", "replace")

    def download(self, path: str, limit: int = READ_TEXT_LIMIT) -> bytes:
        """The whole file; :class:`FileTooLarge` past ``limit`` bytes. The size is asked first, so a
        big file never crosses the network; one that grows meanwhile is refused once received."""
        size = self.size(path)
        if size is not None and size > limit:
            raise FileTooLarge(path, size, limit)
        data = self._download(path)
        if len(data) > limit:
            raise FileTooLarge(path, len(data), limit)
        return data

    def _download(self, path: str) -> bytes:
        from daytona import DaytonaNotFoundError

        try:
            return self._run(f"downloading {path}", lambda: self._sandbox.fs.download_file(path))
        except SandboxLost:
            raise
        except SandboxError as exc:
            # A daemon whose error part carries no status makes the SDK raise a bare DaytonaError:
            # ask the sandbox whether the file is there.
            missing = isinstance(exc.__cause__, DaytonaNotFoundError)
            if not missing:
                try:
                    missing = not self.exists(path)
                except SandboxError:
                    pass  # unknown: report the download's own failure
            if missing:
                raise FileNotFoundError(f"{path}: no such file in Daytona sandbox {self.sandbox_id}") from None
            raise

    def exists(self, path: str) -> bool:
        return self._ask(f"whether {path} exists", shell.exists(path), {"yes": True, "no": False}.get)

    def read_bytes(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        """At most ``limit`` bytes from ``offset`` on; without a limit, the rest of the file, or
        :class:`FileTooLarge` past :data:`READ_TEXT_LIMIT`. Read in pieces that fit one exec reply."""
        if limit is None:
            size = self.size(path)
            if size is None:
                raise FileNotFoundError(f"{path}: no such file in Daytona sandbox {self.sandbox_id}")
            limit = max(0, size - offset)
            if limit > READ_TEXT_LIMIT:
                raise FileTooLarge(path, size, READ_TEXT_LIMIT)
        pieces, left = [], limit
        while True:
            wanted = min(left, READ_PIECE)
            piece = self._read_range(path, offset, wanted)
            pieces.append(piece)
            offset, left = offset + len(piece), left - len(piece)
            if len(piece) < wanted or left <= 0:
                return b"".join(pieces)

    def _read_range(self, path: str, offset: int, wanted: int) -> bytes:
        result = self._exec(shell.read_range(path, offset, wanted), timeout=120)
        if result.exit_code == 3:
            raise FileNotFoundError(f"{path}: no such file in Daytona sandbox {self.sandbox_id}")
        encoded = self._check(result, f"reading {path}").stdout.strip()
        data = base64.b64decode(encoded)
        if len(data) > wanted:  # the agent may have replaced head(1)
            raise SandboxError(f"reading {path}: the sandbox sent {len(data)} bytes where at most {wanted} were asked for")
        return data

    def size(self, path: str) -> int | None:
        size = self._ask(f"the size of {path}", shell.file_size(path), shell.parse_number)
        return None if size < 0 else size

    def _ask(self, what: str, cmd: str, parse: Callable[[str], T | None]) -> T:
        """What a command that only looks prints (yes/no, a number), asked again when its reply is
        not one: a command killed in the sandbox answers with exit 137 and nothing printed (seen in
        the local Daytona server under load: bubblewrap's join race, since fixed), and an empty
        reply taken for "no" once turned a graded answer into a missing one."""
        for attempt in range(1, GARBLED_READS + 1):
            result = self._exec(cmd, timeout=60)
            answer = parse(result.stdout.strip())
            if answer is not None:
                return answer
            self._ask_again(SandboxError(f"no answer to {what} (exit code {result.exit_code}, {attempt} tries): "
                                         f"{(result.stdout + result.stderr).strip()[-200:]!r}"), attempt,
                            f"the sandbox cut short a look at {what} (exit code {result.exit_code}): asking again")  # fmt: skip
        raise AssertionError("unreachable")

    def _ask_again(self, problem: SandboxError, attempt: int, note: str) -> None:
        """After a reply that is not what its script prints: ``problem`` when the sandbox is gone or
        the tries are used up, else ``note`` to the user, and the caller asks again."""
        self._raise_if_lost(problem)
        if attempt == GARBLED_READS:
            raise problem
        self.notify(note)

    def read_appended(self, path: str, offset: int, limit: int = MAX_APPENDED, wait_s: float = 0.5) -> bytes:
        """The bytes of ``path`` from ``offset`` on, waiting in the sandbox up to ``wait_s`` for some
        to appear: the agent's log crosses the network once, as it grows."""
        command = shell.read_appended(path, offset, limit, wait_s)
        for attempt in range(1, GARBLED_READS + 1):
            try:
                # Only a waiting read may be cut short by a cancel: the last read must complete.
                reply = self._run("following the log", lambda: self._sandbox.process.exec(command, timeout=int(wait_s) + 60),
                                  interruptible=wait_s > 0)  # fmt: skip
            except Cancelled:
                return b""  # the caller is stopping the agent; it reads the rest afterwards
            text = reply.result or ""
            self.wire_bytes += len(text)
            parsed = shell.parse_appended(text)
            if parsed is not None:
                break
            # A sandbox being stopped kills the read mid-reply (often an empty one): say that, not this.
            # The read only asks from ``offset`` on: asking again loses and repeats nothing. A loaded
            # sandbox can kill the read's own shell (an empty reply) while the agent runs on.
            self._ask_again(SandboxError(f"unexpected reply while following {path} (exit code {reply.exit_code}, "
                                         f"{attempt} tries): {text.strip()[-200:]!r}"), attempt,
                            f"the sandbox cut short a read of {path} (exit code {reply.exit_code}): reading it again")  # fmt: skip
        size, data = parsed
        if len(data) > limit:  # the agent may have replaced head(1)
            raise SandboxError(f"the sandbox sent {len(data)} bytes of {path} where at most {limit} were asked for")
        if size < offset and (size >= 0 or offset > 0):
            raise SandboxError(f"{path} shrank from at least {offset} to {max(size, 0)} bytes: the log cannot be followed")
        self.log_bytes += len(data)
        return data

    # --- plumbing ---------------------------------------------------------------------------
    def _run(self, what: str, attempt: Callable[[], Awaitable[T]], *, recover=None, guard: bool = True,
             interruptible: bool = False, repeatable: bool = True) -> T:  # fmt: skip
        """``guard=False``: deleting or inspecting, which must go on whatever state the sandbox is in."""
        if guard and self._closed:
            raise SandboxClosed(f"Daytona sandbox {self.sandbox_id} was already deleted")
        retries = 0

        def notify(message: str) -> None:
            nonlocal retries
            retries += 1
            self.notify(message)

        started = time.monotonic()
        work = retrying(what, attempt, budget_s=self._retry_budget(started), notify=notify, recover=recover,
                        check=self._check_state if guard else None, repeatable=repeatable)  # fmt: skip
        try:
            return self._bridge.run(work, cancel=self.interrupt if interruptible else None)
        except Cancelled:
            raise
        except SandboxError:
            raise
        except Exception as exc:  # noqa: BLE001 - one clear line for every SDK failure
            reason = transient_reason(exc)
            if guard and reason is None:
                self._raise_if_lost(exc)
            raise SandboxError(f"{failure_message(what, reason, retries, time.monotonic() - started, repeatable)}: "
                               f"{_message(exc)}") from exc  # fmt: skip

    def _retry_budget(self, now: float) -> float:
        """Retries end when the episode's time does; past it, they get the grading floor."""
        if self.retry_deadline is None:
            return self._settings.retry_budget_s
        left = self.retry_deadline - now
        return min(self._settings.retry_budget_s, left if left > 0 else LATE_RETRY_BUDGET_S)

    async def _check_state(self) -> None:
        from daytona import DaytonaNotFoundError

        try:
            await self._sandbox.refresh_data()
        except DaytonaNotFoundError:  # stopped and auto-deleted (auto_delete_interval=0), or deleted
            raise SandboxLost(_lost_message(self.sandbox_id, "destroyed", "Daytona no longer knows it "
                                            "(stopped and auto-deleted, or deleted)")) from None  # fmt: skip
        state, reason = _state_of(self._sandbox)
        if state not in GOOD_STATES:
            raise SandboxLost(_lost_message(self.sandbox_id, state, reason))

    def _raise_if_lost(self, original: Exception) -> None:
        try:
            self._bridge.run(self._check_state(), timeout=30)
        except SandboxLost as lost:
            raise lost from original
        except Exception:  # noqa: BLE001 - the state is unknown: report the original failure
            return

    @staticmethod
    def _check(result: ExecResult, what: str) -> ExecResult:
        if result.exit_code != 0:
            raise SandboxError(f"{what} failed (exit {result.exit_code}): {(result.stderr or result.stdout).strip()[:300]}")
        return result

    def __repr__(self) -> str:
        return f"DaytonaSandbox(id={self._sandbox.id!r}, closed={self._closed})"


def _state_of(sandbox: Any) -> tuple[str, str]:
    state = getattr(sandbox, "state", None)
    state = getattr(state, "value", state)
    return str(state or "unknown"), str(getattr(sandbox, "error_reason", None) or "")


def _lost_message(sandbox_id: str, state: str, reason: str) -> str:
    return f"Daytona sandbox {sandbox_id} entered state {state!r}" + (f": {reason}" if reason else "")


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
