"""Retrying Daytona calls: rate limits (429), server errors (5xx) and lost connections are retried
with exponential backoff until a time budget runs out; each retry is reported (the stage log shows
it). The SDK itself retries none of them. Everything else fails at once, and so does an API that
cannot be reached (connection refused, unknown host) before it ever answered: that is a wrong
``DAYTONA_API_URL`` or no network, which no retry mends."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from smoldata_tui.sandbox.daytona.settings import api_url, shown_api_url
from smoldata_tui.sandbox.errors import SandboxError

T = TypeVar("T")
FIRST_DELAY_S = 0.5
MAX_DELAY_S = 8.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Shared by every call of the process (every episode of a batch): after a 429 nobody sends until
# the backoff it asked for has passed, so a batch slows down together instead of each episode
# hammering the rate limiter on its own schedule.
_rate_limited_until = 0.0
# The API URLs that answered a call of this process: a refused connection to one of them is an outage
# worth waiting out; to any other, a URL that never worked.
_answered_urls: set[str] = set()
UNREACHABLE = "unreachable"


class DaytonaUnreachable(SandboxError):
    """The Daytona API refused the connection or its host name did not resolve, at the first call."""

    def __init__(self, why: str) -> None:
        super().__init__(f"cannot reach the Daytona API at {shown_api_url()}: {why}")


def shared_backoff_left() -> float:
    """Seconds until calls may go out again after the last 429 (0 when they may now)."""
    return max(0.0, _rate_limited_until - time.monotonic())


def _hold_back(delay_s: float) -> None:
    global _rate_limited_until
    _rate_limited_until = max(_rate_limited_until, time.monotonic() + delay_s)


def transient_reason(exc: BaseException) -> str | None:
    """Why ``exc`` is worth retrying ("rate limited (429)", "connection lost", ...), or None.

    Classified by what the SDK really raises: a failed file transfer is often a plain
    ``DaytonaError`` without a status code (the bulk download calls aiohttp's
    ``raise_for_status`` and wraps the ``ClientResponseError``), so the HTTP status is looked for
    along the exception's causes too."""
    try:
        from daytona import DaytonaConnectionError, DaytonaError, DaytonaRateLimitError
    except ImportError:  # pragma: no cover - the backend is only built when the SDK is installed
        return None
    if (why := unreachable_because(exc)) is not None:
        return f"{UNREACHABLE} ({why})"
    if isinstance(exc, DaytonaRateLimitError):
        return "rate limited (429)"
    if isinstance(exc, DaytonaConnectionError):
        return "connection lost"
    if isinstance(exc, DaytonaError):
        status = http_status(exc)
        if status == 429:
            return "rate limited (429)"
        if status in RETRY_STATUSES:
            return f"server error ({status})"
        if status is None and "websocket closed" in str(exc).lower():
            return "connection lost"
        return None
    if isinstance(exc, (ConnectionError, asyncio.TimeoutError)):
        return "connection lost"
    return None


def unreachable_because(exc: BaseException) -> str | None:
    """"connection refused" or "host not found" when the request never reached a server (so it
    surely did not run), found along the exception's causes; else None."""
    for current in _causes(exc):
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return "host not found"
    return None


def _causes(exc: BaseException):
    """``exc`` and its causes, set by the SDK's and aiohttp's ``raise ... from`` (a ``__context__``
    may be unrelated)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def http_status(exc: BaseException) -> int | None:
    """The HTTP status behind ``exc``: its own ``status_code``, else the first one along its
    causes (a ``DaytonaError``'s ``status_code``, an aiohttp or OpenAPI exception's ``status``)."""
    for current in _causes(exc):
        for attribute in ("status_code", "status"):
            status = getattr(current, attribute, None)
            if isinstance(status, int) and not isinstance(status, bool):
                return status
    return None


def is_ambiguous(reason: str) -> bool:
    """Whether the request may have taken effect. A 429, 502 or 503 comes from Daytona's front
    (rate limiter, proxy) before the sandbox ran anything; after a 500, a 504 or a lost connection
    it may have run, so an operation that must not run twice checks before repeating itself."""
    return not reason.startswith(("rate limited", "server error (502)", "server error (503)", UNREACHABLE))


async def retrying(
    what: str,
    attempt: Callable[[], Awaitable[T]],
    *,
    budget_s: float,
    notify: Callable[[str], None],
    recover: Callable[[], Awaitable[T | None]] | None = None,
    check: Callable[[], Awaitable[None]] | None = None,
    repeatable: bool = True,
) -> T:
    """Run ``attempt`` until it succeeds, a non-transient error escapes, or ``budget_s`` is spent.

    ``recover`` (for operations that must not run twice) is awaited before repeating after an
    ambiguous failure; a non-None result is taken as the operation's result. ``check`` is awaited
    after each failure from the second on and may raise to stop retrying (a sandbox in an error
    state will not come back). ``repeatable=False`` (a command that must not run twice, with no
    way to ask whether it ran) retries only what surely did not run: 429, 502, 503, a refused
    connection. An API never reached in this process raises :class:`DaytonaUnreachable` at once."""
    deadline = time.monotonic() + budget_s
    delay = FIRST_DELAY_S
    failures = 0
    while True:
        if (left := shared_backoff_left()) > 0:
            await asyncio.sleep(left)
        try:
            result = await attempt()
            _answered_urls.add(api_url())
            return result
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below; the rest re-raised unchanged
            reason = transient_reason(exc)
            why = unreachable_because(exc)
            if why is not None and api_url() not in _answered_urls:
                raise DaytonaUnreachable(why) from exc
            if reason is None or time.monotonic() + delay > deadline:
                raise
            if not repeatable and recover is None and is_ambiguous(reason):
                raise
            failures += 1
        if check is not None and failures >= 2:
            await _ignoring_transient(check)
        if reason.startswith("rate limited"):
            _hold_back(delay)
        notify(f"Daytona {reason} on {what}: retry {failures} in {delay:.1f} s")
        await asyncio.sleep(delay * random.uniform(0.8, 1.2))
        delay = min(delay * 2, MAX_DELAY_S)
        if recover is not None and is_ambiguous(reason):
            found = await _ignoring_transient(recover)
            if found is not None:
                return found


async def _ignoring_transient(step: Callable[[], Awaitable[T]]) -> T | None:
    try:
        return await step()
    except Exception as exc:  # noqa: BLE001
        if transient_reason(exc) is None:
            raise
        return None


def failure_message(what: str, reason: str | None, retries: int, elapsed_s: float, repeatable: bool) -> str:
    """What happened to a call that failed for good, as it happened."""
    if reason is None:
        return f"Daytona: {what} failed"
    if not repeatable and is_ambiguous(reason):  # retrying() never repeats these: it raised at once
        earlier = f" (after {retries} retr{'y' if retries == 1 else 'ies'} of other failures)" if retries else ""
        return f"Daytona: {what} failed ({reason}) and was not repeated{earlier}: it may already have run"
    tries = f"{retries} retr{'y' if retries == 1 else 'ies'}"
    return f"Daytona gave up on {what} ({reason}) after {tries} in {elapsed_s:.1f} s"
