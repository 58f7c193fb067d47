"""Telling a failure to write the output (a reader that went away, a full disk) from a bug.

``cli.main`` wraps ``sys.stdout`` in :class:`StdoutGuard` for the length of a command: every write
and flush that fails is remembered, and the exception goes on unchanged (``run --headless`` handles
its own broken pipe). The last-resort handler then asks :meth:`StdoutGuard.failure_of` whether an
exception is that failure. Standard library only: the handler must work when a dependency (orjson,
Rich) fails to import.
"""

from __future__ import annotations

import errno
import os
import sys

EXIT_OUTPUT_FAILED = 74  # sysexits.h EX_IOERR: the output could not be written
EXIT_READER_GONE = 141  # 128 + SIGPIPE: the status of a Unix tool whose reader went away (`| head`)


class _Recorder:
    """Calls ``method`` of ``target``; an ``OSError`` it raises is remembered in ``guard``."""

    def __init__(self, target, guard: StdoutGuard) -> None:
        self._target = target
        self._guard = guard

    def _call(self, method: str, *args):
        try:
            return getattr(self._target, method)(*args)
        except OSError as exc:
            self._guard.failed = exc
            raise

    def write(self, data):
        return self._call("write", data)

    def writelines(self, lines):
        return self._call("writelines", lines)

    def flush(self):
        return self._call("flush")

    def __getattr__(self, name: str):
        return getattr(self._target, name)


class StdoutGuard(_Recorder):
    """``sys.stdout`` (text) with its ``buffer`` (bytes) guarded too."""

    def __init__(self, stream) -> None:
        super().__init__(stream, self)
        self.failed: OSError | None = None
        self.stream = stream
        binary = getattr(stream, "buffer", None)
        self.buffer = _Recorder(binary, self) if binary is not None else None

    def failure_of(self, exc: BaseException) -> OSError | None:
        """The stdout failure behind ``exc`` (itself, or what it was raised while handling: Rich
        turns a broken pipe into ``SystemExit(1)``), else None."""
        seen = exc
        while seen is not None:
            if seen is self.failed:
                return self.failed
            seen = seen.__context__
        return None

    def silence(self) -> None:
        """Point file descriptor 1 at /dev/null, so that the interpreter's last flush of what is
        still buffered does not fail again ("Exception ignored ... BrokenPipeError")."""
        try:
            fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            return  # not a real file (a test's capture): nothing is flushed at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def reader_gone(error: OSError) -> bool:
    return isinstance(error, BrokenPipeError) or error.errno in (errno.EPIPE, errno.ECONNRESET)


def report_output_failure(command: str | None, error: OSError) -> int:
    """One line on stderr (none when the reader went away, as Unix tools stay quiet) and the
    exit status."""
    if reader_gone(error):
        return EXIT_READER_GONE
    reason = error.strerror or str(error)
    try:
        print(f"smoldata-tui{' ' + command if command else ''}: cannot write the output: {reason}", file=sys.stderr)
    except OSError:
        pass  # stderr is gone too: the status alone says it
    return EXIT_OUTPUT_FAILED
