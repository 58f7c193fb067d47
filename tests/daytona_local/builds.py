"""Image builds, simulated: a sandbox created from an image (``buildInfo``) that this server has not
built yet waits for a build whose log lines stream over its duration, as on Daytona; later sandboxes
of the same image start at once (the build is cached). Snapshots never build. Off until
``LocalDaytona.build_image_on_create`` (or ``build_seconds=``) turns it on.

The lifecycle follows Daytona's sandbox manager: ``POST /sandbox`` answers ``pending_build``; the
sandbox turns ``building_snapshot`` at once (a runner picked the build up), then ``started`` when the
build is done. The SDK (``AsyncDaytona._create``) polls while ``pending_build`` and only then opens the
build log, so a sandbox left ``pending_build`` for the whole build would get every line at the end.

Routes: ``GET /api/sandbox/{id}/build-logs-url`` answers ``{"url": "<proxy>/sandboxes/{id}/build-logs"}``
(the control plane's URL shape); that URL streams the log as plain text, one line per ``\\n``, from the
start of the build, and with ``?follow=true`` keeps the response open until the build ends.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.daytona_local.state import ApiError, base_image, build_ref

if TYPE_CHECKING:
    from tests.daytona_local.server import LocalDaytona


def default_lines(params: dict[str, Any]) -> list[str]:
    """BuildKit-like lines for a build nobody gave lines for: one step per Dockerfile line."""
    dockerfile = [line for line in ((params.get("buildInfo") or {}).get("dockerfileContent") or "").splitlines()
                  if line.strip()]  # fmt: skip
    steps = [f"#{i} [{i}/{len(dockerfile)}] {line}" for i, line in enumerate(dockerfile, 1)]
    return ["#0 building with \"local\" instance", *steps, f"#{len(dockerfile) + 1} DONE exporting to image"]


@dataclass
class ImageBuild:
    ref: str
    image: str | None  # the FROM image, for tests' eyes
    lines: list[str]
    started_at: float  # time.monotonic()
    seconds: float

    @property
    def done_at(self) -> float:
        return self.started_at + self.seconds

    def due_at(self, index: int) -> float:
        """Line ``index`` is logged at an even spacing over the build, the first one at its start."""
        return self.started_at + self.seconds * index / max(len(self.lines), 1)

    def logged(self, now: float) -> int:
        """How many lines are logged by ``now``."""
        if now >= self.done_at:
            return len(self.lines)
        return sum(1 for index in range(len(self.lines)) if self.due_at(index) <= now)


class Builds:
    """Every build this server simulated, by ``build_ref``. Touched on the loop and by test accessors,
    under ``lock``."""

    def __init__(self, lock) -> None:
        self.lock = lock
        self.seconds = 0.0  # 0: no simulation, sandboxes from images start at once and build nothing
        self.lines: list[str] | None = None
        self.by_ref: dict[str, ImageBuild] = {}

    def configure(self, seconds: float, lines: list[str] | None) -> None:
        with self.lock:
            self.seconds, self.lines = max(float(seconds), 0.0), None if lines is None else list(lines)

    def start_or_join(self, params: dict[str, Any]) -> ImageBuild | None:
        """The build a new sandbox waits for: a new one, or the one of its image still running; None
        when it need not wait (no simulation, a snapshot, or the image already built)."""
        ref = build_ref(params)
        with self.lock:
            if ref is None or self.seconds <= 0:
                return None
            build = self.by_ref.get(ref)
            if build is None:
                lines = self.lines if self.lines is not None else default_lines(params)
                build = ImageBuild(ref, base_image(params), list(lines), time.monotonic(), self.seconds)
                self.by_ref[ref] = build
                return build
            return build if time.monotonic() < build.done_at else None

    def find(self, ref: str | None) -> ImageBuild | None:
        with self.lock:
            return self.by_ref.get(ref) if ref else None

    def images(self) -> list[str | None]:
        with self.lock:
            return [build.image for build in sorted(self.by_ref.values(), key=lambda b: b.started_at)]


def add_routes(app: web.Application, server: LocalDaytona) -> None:
    logs = BuildLogs(server)
    app.router.add_get("/api/sandbox/{id}/build-logs-url", logs.url)
    app.router.add_get("/sandboxes/{id}/build-logs", logs.stream)


class BuildLogs:
    def __init__(self, server: LocalDaytona) -> None:
        self.server = server

    def _record(self, request: web.Request):
        record = self.server.state.find(request.match_info["id"])
        if record is None:
            raise ApiError(404, f"Sandbox with ID or name {request.match_info['id']} not found")
        return record

    async def url(self, request: web.Request) -> web.Response:
        record = self._record(request)
        if not (record.json.get("buildInfo") or {}).get("snapshotRef"):
            raise ApiError(404, f"Sandbox {request.match_info['id']} has no build info")
        return web.json_response({"url": f"{self.server.proxy_url}/sandboxes/{record.id}/build-logs"})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        record = self._record(request)
        build = self.server.builds.find((record.json.get("buildInfo") or {}).get("snapshotRef"))
        follow = request.query.get("follow", "").lower() == "true"
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        await response.prepare(request)
        transport = request.transport
        self.server.open_log_sockets.add(transport)  # drop_connections aborts it
        try:
            sent = 0
            while build is not None:
                now = time.monotonic()
                logged = build.logged(now)
                if logged > sent:
                    await response.write("".join(line + "\n" for line in build.lines[sent:logged]).encode())
                    sent = logged
                if not follow or (now >= build.done_at and sent == len(build.lines)):
                    break
                wake_at = build.due_at(sent) if sent < len(build.lines) else build.done_at
                try:
                    await asyncio.wait_for(self.server.stopping.wait(), max(min(wake_at, build.done_at) - now, 0.001))
                    break  # the server is stopping
                except TimeoutError:
                    pass
            await response.write_eof()
        except ConnectionError:  # the client went away, or drop_connections aborted us
            pass
        finally:
            self.server.open_log_sockets.discard(transport)
        return response
