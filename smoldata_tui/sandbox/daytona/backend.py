"""Creating, listing and collecting Daytona sandboxes (the protocol's ``SandboxBackend``).

Every sandbox carries our labels (app, run, owner, task) and a unique name, is recorded as a live
run of this process, is deleted at interpreter exit if still alive, and has a lifetime cap plus an
inactivity auto-stop (with auto-delete on stop), so even a SIGKILLed app leaves nothing for long.
A create that fails or times out deletes the sandbox it may have made, by id or by name.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from smoldata_tui.sandbox import registry
from smoldata_tui.sandbox.daytona import live_runs
from smoldata_tui.sandbox.daytona.bridge import Cancelled, LoopThread, shared_loop
from smoldata_tui.sandbox.daytona.handle import DaytonaSandbox, _message, _state_of
from smoldata_tui.sandbox.daytona.retry import is_ambiguous, retrying, transient_reason
from smoldata_tui.sandbox.daytona.settings import (
    APP_LABEL,
    USER,
    DaytonaSettings,
    labels_for,
    lifetime_minutes,
    require_api_key,
)
from smoldata_tui.sandbox.errors import SandboxError

Progress = Callable[[str], None]
# States of a sandbox whose create has not finished: never an orphan yet, whoever made it.
CREATING_STATES = frozenset({"creating", "pending_build", "building_snapshot", "pulling_snapshot", "starting", "restoring"})
# After a cancel, how long cleaning up a create may take: the user pressed Ctrl-C and waits.
CANCEL_GRACE_S = 1.5
_live: set[DaytonaSandbox] = set()
_exit_hook_lock = threading.Lock()
_exit_hook_installed = False


def _delete_live_at_exit() -> None:
    for handle in list(_live):
        try:
            handle.kill()
        except Exception:  # noqa: BLE001 - keep deleting the others; gc finds what remains
            pass


def _install_exit_hook() -> None:
    """Delete live sandboxes when the interpreter ends, even after an uncaught exception. This must
    run before ``concurrent.futures`` shuts its executors down (after that the SDK's requests fail
    with "cannot schedule new futures"), which plain ``atexit`` handlers do not; ``threading``'s
    exit hooks run first, newest first. ``registry``'s atexit handler stays as a second chance."""
    global _exit_hook_installed
    with _exit_hook_lock:
        if _exit_hook_installed:
            return
        _exit_hook_installed = True
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(_delete_live_at_exit)
    except RuntimeError:  # the interpreter is already shutting down
        pass


async def _new_client():
    from daytona import AsyncDaytona

    return AsyncDaytona()  # reads DAYTONA_API_KEY / _API_URL / _TARGET itself: the key never passes us


# One client (one connection pool) for every live sandbox of the process, per loop and account:
# a batch of many episodes shares it. Counted, so it is closed when its last sandbox goes. Only
# touched from the loop's own thread, so no lock.
_shared_clients: dict[tuple, list] = {}


def _account_key() -> tuple:
    import asyncio
    import hashlib

    key = hashlib.sha256(os.environ.get("DAYTONA_API_KEY", "").encode()).hexdigest()  # never kept in clear
    return (id(asyncio.get_running_loop()), os.environ.get("DAYTONA_API_URL"), os.environ.get("DAYTONA_TARGET"), key)


async def _acquire_client():
    entry = _shared_clients.get(key := _account_key())
    if entry is None:
        entry = _shared_clients[key] = [await _new_client(), 0]
    entry[1] += 1
    return entry[0]


async def _release_client(client) -> None:
    for key, entry in list(_shared_clients.items()):
        if entry[0] is client:
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _shared_clients[key]
            break
    await client.close()


def shared_client_count() -> int:
    """How many shared clients are open (tests: one for a whole batch, none once it ended)."""
    return len(_shared_clients)


class DaytonaSandboxBackend:
    def __init__(self, settings: DaytonaSettings | None = None, *, bridge: LoopThread | None = None) -> None:
        self.settings = settings or DaytonaSettings.from_environment()
        self._bridge = bridge or shared_loop()

    def create(self, *, timeout_s: float | None = 900, envs: dict[str, str] | None = None,
               metadata: dict[str, str] | None = None, progress: Progress | None = None,
               cancel: threading.Event | None = None) -> DaytonaSandbox:  # fmt: skip
        """A started sandbox. ``timeout_s`` is the agent's time limit: the sandbox's lifetime cap
        adds setup time to it. ``progress`` receives build logs and retries; ``cancel`` abandons
        the create (and deletes what it made)."""
        require_api_key()
        say = progress or (lambda _message: None)
        metadata = dict(metadata or {})
        name = f"smoldata-{secrets.token_hex(6)}"
        params = self._params(name, timeout_s, envs, metadata)
        try:
            client = self._bridge.run(_acquire_client(), cancel=cancel)  # the SDK's import alone takes seconds
        except Cancelled:
            raise SandboxError("creating the Daytona sandbox was cancelled") from None
        created_id: list[str] = []
        unsure = False  # whether a create request may have made a sandbox without saying so

        def build_log(chunk: str) -> None:  # chunks of the image build's log, not always whole lines
            for line in chunk.splitlines():
                if line.strip():
                    say(f"build: {line.rstrip()}")

        async def attempt():
            nonlocal unsure
            before, unsure = unsure, True  # in flight: a cancel now leaves it unknown
            try:
                return await client.create(params, timeout=self.settings.create_timeout_s, on_snapshot_create_logs=build_log)
            except Exception as exc:
                sandbox_id = getattr(exc, "sandbox_id", None)
                if sandbox_id:
                    created_id.append(sandbox_id)
                elif not _may_have_made(exc):
                    unsure = before
                raise

        async def find_by_name():  # after a 5xx or a lost connection the create may have happened
            found = await _get_or_none(client, name)
            if found is not None and _state_of(found)[0] != "started":
                await found.wait_for_sandbox_start(timeout=self.settings.create_timeout_s)  # raises on error states
            return found

        live_runs.record(name)  # before the request: gc must not take a sandbox being built for an orphan
        say(f"creating {name} from {self.settings.source}")
        # Retries end with the episode's time (--timeout), however long the retry budget.
        budget = min(self.settings.retry_budget_s, timeout_s) if timeout_s else self.settings.retry_budget_s
        work = retrying("create", attempt, budget_s=budget, notify=say, recover=find_by_name)
        try:
            sandbox = self._bridge.run(work, cancel=cancel)
        except BaseException as exc:
            cancelled = isinstance(exc, Cancelled)
            leftover = self._delete_leftover(client, created_id, name, quick=cancelled) if created_id or unsure else ""
            live_runs.forget(name)
            try:
                self._bridge.run(_release_client(client), timeout=CANCEL_GRACE_S if cancelled else None)
            except Exception:  # noqa: BLE001 - a client that cannot close leaks a socket; report the create
                pass
            if cancelled:
                raise SandboxError(f"creating the Daytona sandbox was cancelled{leftover}") from None
            if isinstance(exc, Exception):
                raise SandboxError(f"creating the Daytona sandbox failed: {_message(exc)}{leftover}") from exc
            raise
        handle = DaytonaSandbox(self._bridge, client, sandbox, self.settings, on_close=self._closed,
                                retry_deadline=time.monotonic() + timeout_s if timeout_s else None)  # fmt: skip
        registry.register(handle)
        _live.add(handle)
        _install_exit_hook()
        handle.start_keepalive()
        state, _ = _state_of(sandbox)
        say(f"sandbox {handle.sandbox_id} ({name}) is {state}")
        return handle

    def _params(self, name: str, timeout_s: float | None, envs: dict[str, str] | None, metadata: dict[str, str]):
        from daytona import CreateSandboxFromImageParams, CreateSandboxFromSnapshotParams, Resources

        settings = self.settings
        common = {
            "name": name,
            "os_user": USER,
            "env_vars": dict(envs or {}),
            "labels": labels_for(metadata.get("run") or name, metadata.get("task", ""), settings.extra_labels),
            "auto_stop_interval": settings.auto_stop_minutes,
            "auto_delete_interval": 0,  # deleted as soon as it stops
            "ttl_minutes": lifetime_minutes(timeout_s),
        }
        if settings.target:
            common["target"] = settings.target  # this create's region, whatever DAYTONA_TARGET says
        if settings.snapshot:
            return CreateSandboxFromSnapshotParams(snapshot=settings.snapshot, **common)
        resources = Resources(cpu=settings.cpu, memory=settings.memory_gb, disk=settings.disk_gb)
        return CreateSandboxFromImageParams(image=settings.image, resources=resources, **common)

    def _delete_leftover(self, client, created_id: list[str], name: str, *, quick: bool = False) -> str:
        """Delete a sandbox a failed create may have left; say what happened, for the message.
        ``quick`` (a cancel: the user is waiting) tries once, for :data:`CANCEL_GRACE_S` at most."""
        async def delete() -> str | None:
            target = await _get_or_none(client, created_id[0] if created_id else name)
            if target is None:
                return None
            await target.delete()
            return target.id

        budget = 0.0 if quick else self.settings.retry_budget_s
        try:
            deleted = self._bridge.run(
                retrying("deleting a half-created sandbox", delete, budget_s=budget, notify=lambda _m: None),
                timeout=CANCEL_GRACE_S if quick else self.settings.retry_budget_s + 30,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001
            return f"; sandbox {name} may remain ({_message(exc)}): run `smoldata-tui daytona gc`"
        return f"; deleted sandbox {deleted}" if deleted else ""

    def _closed(self, handle: DaytonaSandbox) -> None:
        live_runs.forget(handle.name)
        registry.unregister(handle)
        _live.discard(handle)
        try:
            self._bridge.run(_release_client(handle._client), timeout=30)
        except Exception:  # noqa: BLE001 - a client that cannot close leaks a socket, nothing else
            pass

    # --- listing and collecting ---------------------------------------------------------------
    def list_ours(self) -> list[SandboxInfo]:
        """Every sandbox carrying our app label, of any owner."""
        require_api_key()

        async def collect():
            from daytona import ListSandboxesQuery

            client = await _new_client()
            try:
                return [_info(sandbox) async for sandbox in client.list(ListSandboxesQuery(labels={"app": APP_LABEL}))]
            finally:
                await client.close()

        work = retrying("listing sandboxes", collect, budget_s=self.settings.retry_budget_s, notify=lambda _m: None)
        return self._bridge.run(work)

    def delete(self, sandbox_ids: list[str], progress: Progress | None = None) -> list[tuple[str, str | None]]:
        """Delete these sandboxes; (id, error or None) for each."""
        async def delete_all():
            client = await _new_client()
            outcome = []
            try:
                for sandbox_id in sandbox_ids:
                    try:
                        await retrying(f"deleting {sandbox_id}", lambda sid=sandbox_id: _delete_id(client, sid),
                                       budget_s=self.settings.retry_budget_s, notify=progress or (lambda _m: None))
                        outcome.append((sandbox_id, None))
                    except Exception as exc:  # noqa: BLE001 - report each, keep going
                        outcome.append((sandbox_id, _message(exc)))
            finally:
                await client.close()
            return outcome

        return self._bridge.run(delete_all())


@dataclass
class SandboxInfo:
    id: str
    name: str
    state: str
    labels: dict[str, str]
    created_at: str

    @property
    def owner(self) -> str:
        return self.labels.get("owner", "")

    @property
    def mine(self) -> bool:
        return self.owner == labels_for("", "")["owner"]  # labels are cut to their length limit

    @property
    def live_pid(self) -> int | None:
        """The local process running it, when it is a live run of this machine."""
        return live_runs.live_owner(self.name) if self.mine else None

    @property
    def being_made(self) -> bool:
        return self.state in CREATING_STATES


def _info(sandbox) -> SandboxInfo:
    state, _ = _state_of(sandbox)
    return SandboxInfo(sandbox.id, sandbox.name or "", state, dict(sandbox.labels or {}),
                       str(getattr(sandbox, "created_at", "") or ""))  # fmt: skip


def _may_have_made(exc: BaseException) -> bool:
    """Whether a create that failed with ``exc`` (and no sandbox id) may still have made a sandbox:
    its answer was lost or it timed out. A 4xx, a 429/502/503, a refused connection, an error
    raised before the request went out: nothing was made."""
    from daytona import DaytonaTimeoutError

    reason = transient_reason(exc)
    if reason is not None:
        return is_ambiguous(reason)
    return isinstance(exc, (DaytonaTimeoutError, TimeoutError))


async def _get_or_none(client, id_or_name: str):
    from daytona import DaytonaNotFoundError

    try:
        return await client.get(id_or_name)
    except DaytonaNotFoundError:
        return None


async def _delete_id(client, sandbox_id: str) -> None:
    target = await _get_or_none(client, sandbox_id)
    if target is not None:
        await target.delete()
