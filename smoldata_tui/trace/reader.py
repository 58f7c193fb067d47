"""Newline framing for a byte stream that arrives in chunks of any size."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LineBlock:
    """A run of complete lines, cut out of the stream in one piece.

    ``data`` holds the lines exactly as written, each with its ``b"\\n"``,
    except that the final line of a stream may lack one (``terminated``).
    """

    first_line: int  # 1-based number of the block's first line
    offset: int  # byte offset of the block in the stream
    data: bytes
    terminated: bool = True

    def lines(self) -> list[bytes]:
        """The lines without their terminators."""
        parts = self.data.split(b"\n")
        if self.terminated:
            parts.pop()  # the empty piece after the final "\n"
        return parts


class LineFramer:
    """Cuts a byte stream into newline-terminated lines.

    Feed it bytes as they arrive (a live log) or a whole file in chunks
    (replay); both give the same lines. A trailing partial line is held back
    until its newline arrives or :meth:`close` is called. Lines have no length
    limit: a partial line is kept as a list of pieces, so a 50 MB line arriving
    in 64 KB reads costs one join, not a quadratic copy.
    """

    def __init__(self) -> None:
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._next_line = 1
        self._next_offset = 0
        self.closed = False

    @property
    def bytes_framed(self) -> int:
        """Bytes handed out in complete lines so far."""
        return self._next_offset

    @property
    def pending_bytes(self) -> int:
        """Bytes of a partial line still waiting for its newline."""
        return self._pending_size

    def feed(self, data: bytes) -> LineBlock | None:
        """Add bytes; return the lines they complete, if any."""
        if self.closed:
            raise ValueError("feed() after close()")
        if not data:
            return None
        cut = data.rfind(b"\n")
        if cut < 0:
            self._pending.append(data)
            self._pending_size += len(data)
            return None
        head, tail = data[: cut + 1], data[cut + 1 :]
        if self._pending:
            self._pending.append(head)
            head = b"".join(self._pending)
            self._pending.clear()
        self._pending_size = 0
        if tail:
            self._pending.append(tail)
            self._pending_size = len(tail)
        return self._emit(head, terminated=True)

    def close(self) -> LineBlock | None:
        """End of stream: hand out the unterminated last line, if there is one."""
        self.closed = True
        if not self._pending:
            return None
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        return self._emit(data, terminated=False)

    def _emit(self, data: bytes, *, terminated: bool) -> LineBlock:
        block = LineBlock(self._next_line, self._next_offset, data, terminated)
        self._next_line += data.count(b"\n") + (0 if terminated else 1)
        self._next_offset += len(data)
        return block
