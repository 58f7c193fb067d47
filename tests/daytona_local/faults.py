"""Faults the tests inject, and the middleware that applies them together with what every request
goes through on the real service: the request log, the API key check, and response byte counts.

Order per request: dropped connection (no response at all) -> bearer token (401) -> injected status
(the handler never runs; or, for an injected drop, it runs and its answer is lost) -> handler ->
dropped again if the window opened meanwhile.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from tests.daytona_local.state import ApiError, ServerState, error_response, source_for

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# The SDK's Socket.IO client connects on its own schedule (construction, each new sandbox object):
# injected faults never hit it, or a test's ``fail_next(1)`` would race with a background reconnect.
SOCKET_IO = "/socket.io"
DROPPED = 0  # status logged for a request whose connection was aborted
KILLED = -137  # a command answered as if the sandbox had killed its shell: exit 137, no output, never run


@dataclass
class _Failure:
    remaining: int
    status: int  # DROPPED: the request runs, then its connection is aborted (the answer is lost)
    path_contains: str
    method: str | None
    body_contains: bytes | None = None

    def matches(self, request: web.Request, body: bytes | None) -> bool:
        if self.path_contains not in request.path or (self.method is not None and self.method != request.method):
            return False
        return self.body_contains is None or (body is not None and self.body_contains in body)


@dataclass
class Pattern:
    """Standing faults: ``status`` for every ``every``-th request whose path contains
    ``path_contains`` (counted from the first), and for the first request of each kind (method and
    route) when ``first_of_each_kind``."""

    status: int
    every: int = 0
    path_contains: str = ""
    first_of_each_kind: bool = False
    seen: int = 0
    kinds: set[str] = field(default_factory=set)

    def take(self, request: web.Request) -> bool:
        hit = False
        if self.first_of_each_kind:
            kind = f"{request.method} {_route(request)}"
            if kind not in self.kinds:
                self.kinds.add(kind)
                hit = True
        if self.every and self.path_contains in request.path:
            self.seen += 1
            hit = hit or self.seen % self.every == 0
        return hit


def _route(request: web.Request) -> str:
    """The route a request matched (``/toolbox/{sandbox_id}/process/execute``), or its path."""
    resource = getattr(request.match_info.route, "resource", None)
    return resource.canonical if resource is not None else request.path


class Faults:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # fail_next is called from the test thread
        self.failures: list[_Failure] = []
        self.patterns: list[Pattern] = []
        self.drop_until = 0.0
        self.create_delay_s = 0.0

    def fail_next(self, count: int, status: int, path_contains: str, method: str | None,
                  body_contains: bytes | None = None) -> None:  # fmt: skip
        self.failures.append(_Failure(count, status, path_contains, method.upper() if method else None, body_contains))

    def needs_body(self) -> bool:
        with self.lock:
            return any(failure.body_contains is not None for failure in self.failures)

    def dropping(self) -> bool:
        return time.monotonic() < self.drop_until

    def take_failure(self, request: web.Request, body: bytes | None = None) -> int | None:
        """The status to answer ``request`` with instead of running it (DROPPED: run it, then drop
        the connection), consuming one injection."""
        if SOCKET_IO in request.path:
            return None
        with self.lock:
            return self._take(request, body)

    def _take(self, request: web.Request, body: bytes | None) -> int | None:
        for failure in self.failures:
            if failure.remaining > 0 and failure.matches(request, body):
                failure.remaining -= 1
                if failure.remaining == 0:
                    self.failures.remove(failure)
                return failure.status
        hits = [pattern.status for pattern in self.patterns if pattern.take(request)]
        return hits[0] if hits else None


def abort_connection(request: web.Request) -> None:
    """Reset the TCP connection without writing a response: the client sees a disconnect."""
    if request.transport is not None:
        request.transport.abort()


def injected_error(request: web.Request, status: int) -> web.Response:
    if status == 429:
        # NestJS's throttler wording, as the control plane sends it.
        return error_response(request, 429, "ThrottlerException: Too Many Requests", source=source_for(request))
    return error_response(request, status, f"injected fault: HTTP {status}", source=source_for(request))


def make_middleware(state: ServerState, faults: Faults, api_key: str):
    expected = f"Bearer {api_key}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if faults.dropping():
            state.record_request(request.method, request.path, DROPPED)
            abort_connection(request)
            raise web.HTTPException()  # aiohttp cannot write it: the transport is gone
        response = await _answer(request, handler)
        if faults.dropping() and not getattr(response, "prepared", False):
            state.record_request(request.method, request.path, DROPPED)
            abort_connection(request)
            raise web.HTTPException()
        state.record_request(request.method, request.path, response.status)
        if isinstance(response, web.Response) and isinstance(response.body, bytes):
            sandbox_id = request.match_info.get("sandbox_id") if request.path.startswith("/toolbox/") else None
            state.count_bytes(sandbox_id, len(response.body))
        return response

    async def _answer(request: web.Request, handler: Handler) -> web.StreamResponse:
        if SOCKET_IO in request.path:  # no Socket.IO here: the SDK falls back to polling GET /sandbox/{id}
            return error_response(request, 404, "Cannot GET /socket.io/")
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return error_response(request, 401, "Unauthorized", source=source_for(request))
        # Only JSON bodies are read here (aiohttp caches them for the handler); a multipart upload
        # must stay a stream for its handler.
        readable = request.can_read_body and request.content_type == "application/json"
        body = await request.read() if readable and faults.needs_body() else None
        status = faults.take_failure(request, body)
        if status == DROPPED:  # the request takes effect; its answer never arrives
            await _handled(request, handler)
            state.record_request(request.method, request.path, DROPPED)
            abort_connection(request)
            raise web.HTTPException()
        if status == KILLED:
            return web.json_response({"exitCode": 137, "result": ""})
        if status is not None:
            return injected_error(request, status)
        return await _handled(request, handler)

    async def _handled(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as api_error:
            return api_error.response(request)
        except web.HTTPException as http_error:
            if http_error.status == 101 or http_error.status < 400:
                raise
            return error_response(request, http_error.status, http_error.reason, source=source_for(request))

    return middleware
