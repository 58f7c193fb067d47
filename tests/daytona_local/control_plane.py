"""The control-plane routes (``{api_url}/sandbox...``) the SDK 0.226.1 calls: create, get, list,
stop, delete, keep-alive and the cheap setters. Paths, query parameters and bodies follow
``daytona_api_client_async/api/sandbox_api.py``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from aiohttp import web

from smoldata_tui.opencode.plugin_deps import write_home_files
from smoldata_tui.sandbox.layout import HOME as SANDBOX_HOME
from smoldata_tui.sandbox.host_python import DEFAULT_PATH, host_python_path
from smoldata_tui.sandbox import SandboxError
from tests.daytona_local.builds import ImageBuild
from tests.daytona_local.state import SandboxRecord, base_image, error_response, now_iso, sandbox_json

if TYPE_CHECKING:
    from tests.daytona_local.server import LocalDaytona

# A "no-python" image's sandboxes (server.IMAGE_KINDS) find /usr/bin's commands but python* here,
# on a PATH without /usr/bin and /bin.
NO_PYTHON_BIN = "/opt/no-python/bin"
NO_PYTHON_PATH = f"/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:{NO_PYTHON_BIN}"

# Fields the list endpoint leaves out (SandboxListItem has no env, build info or network details).
_LIST_OMITS = ("env", "kvm", "buildInfo", "volumes", "outboundProxyUrl", "otelEndpointOverride")
_DEFAULT_PAGE = 100


def add_routes(app: web.Application, server: LocalDaytona) -> None:
    routes = ControlPlane(server)
    app.router.add_post("/api/sandbox", routes.create)
    app.router.add_get("/api/sandbox", routes.list)
    app.router.add_get("/api/sandbox/{id}", routes.get)
    app.router.add_delete("/api/sandbox/{id}", routes.delete)
    app.router.add_post("/api/sandbox/{id}/stop", routes.stop)
    app.router.add_post("/api/sandbox/{id}/start", routes.start)
    app.router.add_post("/api/sandbox/{id}/last-activity", routes.last_activity)
    app.router.add_get("/api/sandbox/{id}/toolbox-proxy-url", routes.toolbox_proxy_url)
    app.router.add_put("/api/sandbox/{id}/labels", routes.replace_labels)
    for setting, field in (("autostop", "autoStopInterval"), ("autodelete", "autoDeleteInterval"),
                           ("autoarchive", "autoArchiveInterval"), ("ttl", "ttlMinutes")):  # fmt: skip
        app.router.add_post(f"/api/sandbox/{{id}}/{setting}/{{value}}", routes.setter(field))


class ControlPlane:
    def __init__(self, server: LocalDaytona) -> None:
        self.server = server
        self.state = server.state

    async def create(self, request: web.Request) -> web.Response:
        params = await request.json()
        sandbox_id = str(uuid.uuid4())
        record = SandboxRecord(sandbox_id, params.get("name") or sandbox_id, params,
                               sandbox_json(sandbox_id, params, self.server.toolbox_url))  # fmt: skip
        with self.state.lock:  # check and reserve the name at once: concurrent creates race here
            if any(r.name == record.name for r in self.state.sandboxes.values()):
                return error_response(request, 409, f"Sandbox with name {record.name} already exists")
            self.state.sandboxes[sandbox_id] = record
            self.state.create_params[sandbox_id] = json.loads(json.dumps(params))  # a copy: setters edit params
        build = self.server.builds.start_or_join(params)
        if build is not None:  # an image not built yet: answer pending_build, start once it is built
            with self.state.lock:
                record.set_state("pending_build")
            self.server.in_background(self._build_then_start(record, build))
        else:
            try:
                record.local = await self.server.run_blocking(self._create_local, params)
            except (SandboxError, OSError) as error:  # e.g. bubblewrap missing or unusable
                self.state.remove(sandbox_id)
                return error_response(request, 500, f"local sandbox could not start: {error}")
            record.set_state("started")
        if self.server.faults.create_delay_s:
            # The sandbox exists while the answer is late, so a client that gives up can find it by
            # name or labels, as after a create timeout on the real service. Stopping cuts it short.
            try:
                await asyncio.wait_for(self.server.stopping.wait(), self.server.faults.create_delay_s)
            except TimeoutError:
                pass
        with self.state.lock:  # it may have been deleted meanwhile: answer with its last record
            return web.json_response(copy.deepcopy(record.json))

    async def _build_then_start(self, record: SandboxRecord, build: ImageBuild) -> None:
        """A runner takes the build at once (building_snapshot); the local sandbox is made meanwhile,
        and the sandbox is started when the build is done, unless it was stopped, deleted or put in an
        error state by then. Runs on the loop; ``LocalDaytona._shutdown`` waits for it."""
        with self.state.lock:
            if record.state == "pending_build":
                record.set_state("building_snapshot")
        try:
            local = await self.server.run_blocking(self._create_local, record.create_params)
        except (SandboxError, OSError) as error:
            with self.state.lock:
                record.set_state("build_failed", f"local sandbox could not start: {error}")
            return
        with self.state.lock:  # deleted meanwhile (or the server stopped): nobody else will kill it
            record.local = local
            kept = self.state.sandboxes.get(record.id) is record
        if not kept:
            await self.server.run_blocking(local.kill)
            return
        try:
            await asyncio.wait_for(self.server.stopping.wait(), max(build.done_at - time.monotonic(), 0))
            return  # stopping: _shutdown kills it
        except TimeoutError:
            pass
        with self.state.lock:
            if record.state in ("pending_build", "building_snapshot"):
                record.set_state("started")

    def _create_local(self, params: dict[str, Any]):
        with_opencode = bool(params.get("snapshot")) or base_image(params) in self.server.images_with_opencode
        kind = None if params.get("snapshot") else self.server.image_kinds.get(base_image(params))
        backend = self.server.backend(with_opencode, kind)
        ttl_minutes = params.get("ttlMinutes") or 0
        # Like the environment's data-agent image, a sandbox has a Python with the packages
        # opencode_env's logging proxy needs (the host's interpreter, bound read-only), unless its
        # image is of a kind that has only its own (server.IMAGE_KINDS).
        path = host_python_path() if kind is None else NO_PYTHON_PATH if kind == "no-python" else DEFAULT_PATH
        envs = {"PATH": path, **dict(params.get("env") or {})}
        sandbox = backend.create(timeout_s=ttl_minutes * 60 or None, envs=envs,
                                 metadata={"daytona_name": params.get("name") or ""})  # fmt: skip
        if with_opencode and self.server.plugin_deps is not None:  # an image that has OpenCode (server.py)
            write_home_files(sandbox, self.server.plugin_deps, SANDBOX_HOME)
        return sandbox

    async def get(self, request: web.Request) -> web.Response:
        record = self._found(request)
        return web.json_response(self.state.snapshot_json(record.id))

    async def list(self, request: web.Request) -> web.Response:
        query = request.query
        wanted_labels = json.loads(query["labels"]) if query.get("labels") else {}
        states = set(query.getall("states", []))
        records = sorted(self.state.all(), key=lambda r: r.json["createdAt"])
        matching = [
            r for r in records
            if all(r.json["labels"].get(k) == v for k, v in wanted_labels.items())
            and r.id.lower().startswith(query.get("id", "").lower())
            and r.name.lower().startswith(query.get("name", "").lower())
            and (not states or r.state in states)
        ]  # fmt: skip
        start = int(query.get("cursor") or 0)  # the cursor is opaque to the SDK: an offset will do
        limit = int(query.get("limit") or _DEFAULT_PAGE)
        page = matching[start : start + limit]
        items = []
        for record in page:
            item = self.state.snapshot_json(record.id)
            for key in _LIST_OMITS:
                item.pop(key, None)
            items.append(item)
        next_cursor = str(start + limit) if start + limit < len(matching) else None
        return web.json_response({"items": items, "nextCursor": next_cursor})

    async def delete(self, request: web.Request) -> web.Response:
        record = self._found(request)
        self.state.remove(record.id)
        # Answer only once the local sandbox is gone, so "deleted" means no process or file is left.
        await self.server.kill_local(record)
        record.set_state("destroyed")
        return web.json_response(record.json)

    async def stop(self, request: web.Request) -> web.Response:
        record = self._found(request)
        await stop_sandbox(self.server, record)
        return web.json_response(record.json)

    async def start(self, request: web.Request) -> web.Response:
        record = self._found(request)
        if record.state == "started":
            return web.json_response(self.state.snapshot_json(record.id))
        return error_response(request, 400, f"Sandbox {record.id} is {record.state}; local sandboxes cannot restart")

    async def last_activity(self, request: web.Request) -> web.Response:
        self._found(request).touch()
        return web.Response(status=201)

    async def toolbox_proxy_url(self, request: web.Request) -> web.Response:
        self._found(request)
        return web.json_response({"url": self.server.toolbox_url})

    async def replace_labels(self, request: web.Request) -> web.Response:
        record = self._found(request)
        labels = (await request.json()).get("labels") or {}
        with self.state.lock:
            record.json["labels"] = dict(labels)
        return web.json_response({"labels": labels})

    def setter(self, field: str):
        async def handler(request: web.Request) -> web.Response:
            record = self._found(request)
            value = int(request.match_info["value"])
            with self.state.lock:
                if field == "ttlMinutes":
                    record.create_params["ttlMinutes"] = value  # what GET shows: autoDestroyAt
                    record.json.pop("autoDestroyAt", None)
                    if value:
                        record.json["autoDestroyAt"] = now_iso(timedelta(minutes=value))
                else:
                    record.json[field] = value
            return web.json_response(self.state.snapshot_json(record.id))

        return handler

    def _found(self, request: web.Request) -> SandboxRecord:
        record = self.state.find(request.match_info["id"])
        if record is None:
            raise web.HTTPNotFound(reason=f"Sandbox with ID or name {request.match_info['id']} not found")
        return record


async def stop_sandbox(server: LocalDaytona, record: SandboxRecord) -> None:
    """Stop a sandbox (a stop request, or the service's inactivity auto-stop); one whose
    ``autoDeleteInterval`` is 0 is deleted at once, as the service deletes ephemeral sandboxes."""
    record.set_state("stopping")
    # A local sandbox cannot keep its files without its processes: stopping ends both.
    await server.kill_local(record)
    if record.json.get("autoDeleteInterval") == 0:
        server.state.remove(record.id)
        record.set_state("destroyed")
    else:
        record.set_state("stopped")
