"""One private asyncio loop in a daemon thread, where every Daytona SDK call runs.

The sandbox protocol (what opencode_env's harness calls) is synchronous, and the episode runner is a
worker thread; the SDK we use is the async one (the sync client uses SIGALRM and ``asyncio.run``,
which break inside Textual). Running the SDK on its own loop keeps network work off the UI loop,
so a slow Daytona call can never stall the screen.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_CANCEL_CHECK_S = 0.1


class Cancelled(Exception):
    """The caller's cancel event was set while the call was running; the call was abandoned."""


class LoopThread:
    def __init__(self, name: str = "smoldata-daytona") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None,
            cancel: threading.Event | None = None) -> T:  # fmt: skip
        """Run ``coro`` on the loop and wait for it. With ``cancel``, setting that event cancels the
        coroutine (the SDK's request is aborted) and raises :class:`Cancelled`."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop: await the coroutine instead")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        waited = 0.0
        while True:
            step = _CANCEL_CHECK_S if cancel is not None else timeout
            if timeout is not None and step is not None:
                step = min(step, max(0.0, timeout - waited))
            try:
                return future.result(step)
            except concurrent.futures.TimeoutError:
                if future.done():
                    raise  # the coroutine's own TimeoutError (the same class since 3.11), not ours
                waited += step or 0.0
                if cancel is not None and cancel.is_set():
                    future.cancel()
                    raise Cancelled() from None
                if timeout is not None and waited >= timeout:
                    future.cancel()
                    raise TimeoutError(f"no answer within {timeout:g} s") from None
            except BaseException:
                if not future.done():
                    future.cancel()  # KeyboardInterrupt while waiting: do not leave the call running
                raise

    def alive(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()


_shared: LoopThread | None = None
_shared_lock = threading.Lock()


def shared_loop() -> LoopThread:
    """The process's Daytona loop, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.alive():
            _shared = LoopThread()
        return _shared
