"""Faults the tests inject, and the middleware that applies them together with what every request
goes through on the real service: the request log, the API key check, and response byte counts.

Order per request: dropped connection (no response at all) -> bearer token (401) -> injected status
(the handler never runs) -> handler -> dropped again if the window opened meanwhile.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from tests.daytona_local.state import ApiError, ServerState, error_response, source_for

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# The SDK's Socket.IO client connects on its own schedule (construction, each new sandbox object):
# injected faults never hit it, or a test's ``fail_next(1)`` would race with a background reconnect.
SOCKET_IO = "/socket.io"
DROPPED = 0  # status logged for a request whose connection was aborted


@dataclass
class _Failure:
    remaining: int
    status: int
    path_contains: str
    method: str | None

    def matches(self, request: web.Request) -> bool:
        return self.path_contains in request.path and (self.method is None or self.method == request.method)


class Faults:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # fail_next is called from the test thread
        self.failures: list[_Failure] = []
        self.drop_until = 0.0
        self.create_delay_s = 0.0

    def fail_next(self, count: int, status: int, path_contains: str, method: str | None) -> None:
        self.failures.append(_Failure(count, status, path_contains, method.upper() if method else None))

    def dropping(self) -> bool:
        return time.monotonic() < self.drop_until

    def take_failure(self, request: web.Request) -> int | None:
        """The status to answer ``request`` with instead of running it, consuming one injection."""
        if SOCKET_IO in request.path:
            return None
        with self.lock:
            return self._take(request)

    def _take(self, request: web.Request) -> int | None:
        for failure in self.failures:
            if failure.remaining > 0 and failure.matches(request):
                failure.remaining -= 1
                if failure.remaining == 0:
                    self.failures.remove(failure)
                return failure.status
        return None


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
        status = faults.take_failure(request)
        if status is not None:
            return injected_error(request, status)
        try:
            return await handler(request)
        except ApiError as api_error:
            return api_error.response(request)
        except web.HTTPException as http_error:
            if http_error.status == 101 or http_error.status < 400:
                raise
            return error_response(request, http_error.status, http_error.reason, source=source_for(request))

    return middleware
