"""What the fake Daytona remembers: sandboxes (the records the control plane returns, and the local
bubblewrap sandbox behind each), their toolbox sessions and commands, and the request log.

Everything here is touched from two threads: the server's event loop and the test thread calling
``LocalDaytona``'s accessors. ``ServerState.lock`` guards the shared collections; the loop never
holds it across an ``await``.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

ORGANIZATION_ID = "00000000-0000-4000-8000-00000000a11e"
SOURCE_API = "DAYTONA_API"
SOURCE_PROXY = "DAYTONA_PROXY"
SOURCE_DAEMON = "DAYTONA_DAEMON"
# Defaults the real service applies when a create request leaves them out.
DEFAULT_RESOURCES = {"cpu": 1, "gpu": 0, "memory": 1, "disk": 3}
DEFAULT_AUTO_STOP_MIN = 15
DEFAULT_AUTO_ARCHIVE_MIN = 7 * 24 * 60
STATUS_CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 408: "REQUEST_TIMEOUT",
                409: "CONFLICT", 410: "GONE", 422: "UNPROCESSABLE_ENTITY", 429: "TOO_MANY_REQUESTS",
                500: "INTERNAL_SERVER_ERROR", 502: "BAD_GATEWAY", 503: "SERVICE_UNAVAILABLE",
                504: "GATEWAY_TIMEOUT"}  # fmt: skip
_DESIRED_STATES = {"started": "started", "starting": "started", "stopping": "stopped", "stopped": "stopped",
                   "destroying": "destroyed", "destroyed": "destroyed"}  # fmt: skip


def now_iso(delta: timedelta = timedelta()) -> str:
    return (datetime.now(UTC) + delta).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def error_response(request: web.Request, status: int, message: str, *, code: str | None = None,
                   source: str = SOURCE_API) -> web.Response:  # fmt: skip
    """The envelope every Daytona service answers errors with; the SDK picks its exception class from
    ``(source, code)`` first and ``statusCode`` second. ``path`` and ``timestamp`` are required by the
    toolbox client's ErrorResponse model."""
    body = {"statusCode": status, "message": message, "code": code or STATUS_CODES.get(status, "ERROR"),
            "source": source, "timestamp": now_iso(), "path": request.path, "method": request.method}  # fmt: skip
    return web.json_response(body, status=status)


class ApiError(Exception):
    """Raised by a handler to answer with a Daytona error envelope (see ``error_response``)."""

    def __init__(self, status: int, message: str, *, code: str | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.source = status, message, code, source

    def response(self, request: web.Request) -> web.Response:
        return error_response(request, self.status, self.message, code=self.code,
                              source=self.source or source_for(request))  # fmt: skip


def source_for(request: web.Request) -> str:
    return SOURCE_PROXY if request.path.startswith("/toolbox/") else SOURCE_API


@dataclass
class CommandRecord:
    """One session command: a background job in the local sandbox. Its stdout is the job's log file
    on the host; its stderr goes to ``stderr_path`` inside the sandbox, so the two streams stay apart
    as the daemon keeps them."""

    id: str
    command: str
    job: Any  # LocalBgJob
    stderr_path: str
    done: asyncio.Event
    exit_code: int | None = None

    def finish(self, exit_code: int) -> None:  # runs on the loop (call_soon_threadsafe)
        self.exit_code = exit_code
        self.done.set()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "command": self.command, "exitCode": self.exit_code}


@dataclass
class SandboxRecord:
    id: str
    name: str
    create_params: dict[str, Any]
    json: dict[str, Any]
    local: Any = None  # LocalSandbox while the sandbox runs
    sessions: dict[str, dict[str, CommandRecord]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return self.json["state"]

    def set_state(self, state: str, reason: str | None = None) -> None:
        self.json["state"] = state
        # What the service is driving the sandbox towards; an error state leaves it unchanged.
        self.json["desiredState"] = _DESIRED_STATES.get(state, self.json["desiredState"])
        self.json["updatedAt"] = now_iso()
        if reason is None:
            self.json.pop("errorReason", None)
            self.json.pop("recoverable", None)
        else:
            self.json["errorReason"] = reason
            self.json["recoverable"] = False

    def touch(self) -> None:
        self.json["lastActivityAt"] = now_iso()


def sandbox_json(sandbox_id: str, params: dict[str, Any], toolbox_url: str) -> dict[str, Any]:
    """The Sandbox DTO for a create request, with every field the SDK's strict model requires."""
    created = now_iso()
    ttl = params.get("ttlMinutes") or 0
    record: dict[str, Any] = {
        "id": sandbox_id,
        "organizationId": ORGANIZATION_ID,
        "name": params.get("name") or sandbox_id,
        "user": params.get("user") or "root",
        "env": dict(params.get("env") or {}),
        "labels": dict(params.get("labels") or {}),
        "public": bool(params.get("public", False)),
        "networkBlockAll": bool(params.get("networkBlockAll", False)),
        "kvm": bool(params.get("kvm", False)),
        "target": params.get("target") or "local",
        **{
            key: params.get(key) if params.get(key) is not None else default
            for key, default in DEFAULT_RESOURCES.items()
        },
        "state": "creating",
        "desiredState": "started",
        "autoStopInterval": _default(params.get("autoStopInterval"), DEFAULT_AUTO_STOP_MIN),
        "autoArchiveInterval": _default(params.get("autoArchiveInterval"), DEFAULT_AUTO_ARCHIVE_MIN),
        "autoDeleteInterval": _default(params.get("autoDeleteInterval"), -1),
        "createdAt": created,
        "updatedAt": created,
        "lastActivityAt": created,
        "runnerId": "local",
        "daemonVersion": "local",
        "toolboxProxyUrl": toolbox_url,
    }
    for key in ("networkAllowList", "domainAllowList"):
        if params.get(key) is not None:
            record[key] = params[key]
    if ttl:
        record["autoDestroyAt"] = now_iso(timedelta(minutes=ttl))
    if params.get("snapshot"):
        record["snapshot"] = params["snapshot"]
    build = params.get("buildInfo")
    if build:
        record["buildInfo"] = {"dockerfileContent": build.get("dockerfileContent"),
                               "contextHashes": build.get("contextHashes") or [],
                               "createdAt": created, "updatedAt": created,
                               "snapshotRef": build_ref(params)}  # fmt: skip
    return record


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value


def build_ref(params: dict[str, Any]) -> str | None:
    """What names a build, ``buildInfo.snapshotRef``: the same Dockerfile and context build once."""
    build = params.get("buildInfo")
    if not build:
        return None
    key = (build.get("dockerfileContent") or "") + "\0" + "\0".join(sorted(build.get("contextHashes") or []))
    return "local-build-" + hashlib.sha256(key.encode()).hexdigest()[:16]


def base_image(params: dict[str, Any]) -> str | None:
    """The image a create-from-image request names: the SDK sends it as ``FROM <image>`` in a
    Dockerfile (``buildInfo.dockerfileContent``), never as a field of its own."""
    dockerfile = (params.get("buildInfo") or {}).get("dockerfileContent") or ""
    for line in dockerfile.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].upper() == "FROM":
            return parts[1]
    return None


class ServerState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sandboxes: dict[str, SandboxRecord] = {}
        self.create_params: dict[str, dict[str, Any]] = {}  # every sandbox ever created, by id
        self.requests: list[tuple[str, str, int]] = []
        self.bytes_total = 0
        self.bytes_by_sandbox: dict[str, int] = {}

    def find(self, id_or_name: str) -> SandboxRecord | None:
        with self.lock:
            self._forget_expired()
            record = self.sandboxes.get(id_or_name)
            if record is None:
                record = next((r for r in self.sandboxes.values() if r.name == id_or_name), None)
            return record

    def name_taken(self, name: str) -> bool:
        with self.lock:
            return any(r.name == name for r in self.sandboxes.values())

    def add(self, record: SandboxRecord) -> None:
        with self.lock:
            self.sandboxes[record.id] = record

    def remove(self, sandbox_id: str) -> SandboxRecord | None:
        with self.lock:
            return self.sandboxes.pop(sandbox_id, None)

    def all(self) -> list[SandboxRecord]:
        with self.lock:
            self._forget_expired()
            return list(self.sandboxes.values())

    def _forget_expired(self) -> None:
        """Drop sandboxes whose local sandbox ended by itself (its ``ttlMinutes`` lifetime): the
        service destroys a sandbox when its TTL runs out."""
        for record in list(self.sandboxes.values()):
            if record.state == "started" and record.local is not None and not record.local.alive:
                del self.sandboxes[record.id]

    def snapshot_json(self, sandbox_id: str) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.sandboxes[sandbox_id].json)

    def record_request(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.requests.append((method, path, status))

    def count_bytes(self, sandbox_id: str | None, count: int) -> None:
        with self.lock:
            self.bytes_total += count
            if sandbox_id:
                self.bytes_by_sandbox[sandbox_id] = self.bytes_by_sandbox.get(sandbox_id, 0) + count
