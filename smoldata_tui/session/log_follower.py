"""Follow the agent's log inside a sandbox by its new bytes only, into a local trace file.

Live and replay are one path: what arrives is appended to the episode's trace file (which the
viewer follows) and handed to a sink (the headless printer, the trace analysis). The log is
never re-read from the start: a remote sandbox with ``read_appended`` (Daytona) is asked for the
bytes past an offset, waiting in the sandbox until there are some (one request per new chunk or
per idle half second); a backend with ``size``/``read_bytes`` (the local sandbox) is read by
offset; any other handle by ``tail -c +N`` through ``exec``.

The agent controls the log's size (``truncate -s 1G`` costs it nothing), so at most ``limit``
bytes (:data:`MAX_TRACE_BYTES`) are taken: past that the follower stops reading, and
:attr:`LogFollower.capped` says so for the episode to record.
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.masking import SecretScrubber

MAX_READ = 4 << 20  # bytes taken per poll, so a burst never holds everything in memory
MAX_TRACE_BYTES = 64 << 20  # the saved trace's cap: real traces are a few MB
REMOTE_WAIT_S = 0.5  # how long a remote read waits in the sandbox for the log to grow


class LogFollower:
    def __init__(self, sandbox: object, remote_path: str, local_path: Path, sink: Callable[[bytes], None],
                 scrubber: SecretScrubber | None = None, limit: int = MAX_TRACE_BYTES) -> None:  # fmt: skip
        self._sandbox = sandbox
        self._scrubber = scrubber or SecretScrubber(())
        self._remote = remote_path
        self._local = open(local_path, "ab", buffering=0)  # noqa: SIM115 - closed in close()
        self._sink = sink
        self.offset = 0
        self.limit = limit
        self._appended = getattr(sandbox, "read_appended", None)
        self._by_offset = callable(getattr(sandbox, "read_bytes", None)) and callable(getattr(sandbox, "size", None))

    @property
    def capped(self) -> bool:
        """Whether the log reached :attr:`limit` (nothing past it is read)."""
        return self.offset >= self.limit

    def remote_size(self) -> int | None:
        """The log's size in the sandbox now, when the backend can tell (for the cap's record)."""
        try:
            return self._sandbox.size(self._remote) if callable(getattr(self._sandbox, "size", None)) else None
        except Exception:  # noqa: BLE001 - only a note: the sandbox may be gone
            return None

    def poll(self, *, final: bool = False) -> int:
        """Take whatever the log gained since the last poll; returns how many bytes. A remote read
        may wait briefly for new bytes, unless ``final`` (the agent has ended)."""
        taken = 0
        while True:
            wanted = min(MAX_READ, self.limit - self.offset)
            data = self._read_new(wait_s=0.0 if final or taken else REMOTE_WAIT_S, wanted=wanted) if wanted > 0 else b""
            if not data:
                if final:
                    self._deliver(self._scrubber.flush())
                return taken
            data = data[:wanted]
            self.offset += len(data)
            taken += len(data)
            self._deliver(self._scrubber.feed(data))
            if len(data) < wanted:
                if final:
                    self._deliver(self._scrubber.flush())
                return taken

    def _deliver(self, data: bytes) -> None:
        if data:
            self._local.write(data)  # first to disk: a crash loses nothing already received
            self._sink(data)

    def _read_new(self, wait_s: float, wanted: int) -> bytes:
        if self._appended is not None:
            return self._appended(self._remote, self.offset, wanted, wait_s)
        if self._by_offset:
            size = self._sandbox.size(self._remote)
            if size is None or size <= self.offset:
                return b""
            return self._sandbox.read_bytes(self._remote, self.offset, min(size - self.offset, wanted))
        # Base64 keeps arbitrary bytes intact through a text-only exec channel.
        command = (
            f"test -f {shlex.quote(self._remote)} && "
            f"tail -c +{self.offset + 1} {shlex.quote(self._remote)} | head -c {wanted} | base64 -w0"
        )
        result = self._sandbox.exec(command, timeout=60)
        if result.exit_code != 0 or not result.stdout.strip():
            return b""
        return base64.b64decode(result.stdout.strip())

    def close(self) -> None:
        if not self._local.closed:
            self._deliver(self._scrubber.flush())
            os.fsync(self._local.fileno())
            self._local.close()
