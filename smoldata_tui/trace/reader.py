"""Newline framing for a byte stream that arrives in chunks of any size."""

from __future__ import annotations

from dataclasses import dataclass

_CR = b"\r"


def may_hold_extra_breaks(data: bytes) -> bool:
    """Whether ``data`` could hold a line break that ``str.splitlines()`` honours besides LF.

    A JSON line orjson accepts can only carry CR (as whitespace) or, raw inside a
    string, U+0085, U+2028 or U+2029, whose UTF-8 forms end in 0x85, 0xA8 or 0xA9.
    These single-byte searches run at memory speed and, unlike a search for the
    multi-byte sequences, stay right when a chunk boundary cuts a character.
    """
    if _CR in data:
        return True
    return not data.isascii() and (b"\x85" in data or b"\xa8" in data or b"\xa9" in data)


@dataclass(frozen=True, slots=True)
class LineBatch:
    """Complete lines cut out of the stream in one piece."""

    first_line: int  # 1-based number of the first line
    offset: int  # byte offset of the first line in the stream
    lines: list[bytes]  # without their "\n"
    terminated: bool = True  # False only for the last line of a stream that lacks its "\n"
    may_split: bool = True  # False when no line can hold a break other than "\n"


class LineFramer:
    """Cuts a byte stream into newline-terminated lines.

    Feed it bytes as they arrive (a live log) or a whole file in chunks
    (replay); both give the same lines. A trailing partial line is held back
    until its newline arrives or :meth:`close` is called. Lines have no length
    limit: a partial line is kept as a list of pieces, so a 50 MB line arriving
    in 64 KB reads costs one join, not a quadratic copy. Complete lines are
    never copied: the chunk is split once and only a carried-over head is joined.
    """

    def __init__(self, *, first_line: int = 1, offset: int = 0) -> None:
        """``first_line``/``offset``: where the bytes fed start, when they are not the stream's start."""
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._pending_may_split = False
        self._next_line = first_line
        self._next_offset = offset
        self.first_offset = offset
        self.closed = False

    @property
    def bytes_framed(self) -> int:
        """Stream offset after the last complete line handed out."""
        return self._next_offset

    @property
    def pending_bytes(self) -> int:
        """Bytes of a partial line still waiting for its newline."""
        return self._pending_size

    def feed(self, data: bytes) -> LineBatch | None:
        """Add bytes; return the lines they complete, if any."""
        if self.closed:
            raise ValueError("feed() after close()")
        if not data:
            return None
        hit = may_hold_extra_breaks(data)
        lines = data.split(b"\n")
        tail = lines.pop()
        if not lines:  # no newline in this chunk: all of it is still pending
            self._pending.append(tail)
            self._pending_size += len(tail)
            self._pending_may_split |= hit
            return None
        may_split = hit or self._pending_may_split
        carried = self._pending_size
        if self._pending:
            self._pending.append(lines[0])
            lines[0] = b"".join(self._pending)
        self._pending = [tail] if tail else []
        self._pending_size = len(tail)
        self._pending_may_split = hit and bool(tail)
        batch = LineBatch(self._next_line, self._next_offset, lines, True, may_split)
        self._next_line += len(lines)
        self._next_offset += carried + len(data) - len(tail)
        return batch

    def close(self) -> LineBatch | None:
        """End of stream: hand out the unterminated last line, if there is one."""
        self.closed = True
        if not self._pending:
            return None
        data = b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        batch = LineBatch(self._next_line, self._next_offset, [data], False, self._pending_may_split)
        self._next_line += 1
        self._next_offset += len(data)
        return batch
