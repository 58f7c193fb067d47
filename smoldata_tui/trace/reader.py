"""Newline framing for a byte stream that arrives in chunks of any size.

A line longer than :data:`HUGE_LINE_BYTES` is never held whole (an agent can make one for free:
``truncate -s 2G`` on its log): the framer keeps its first :data:`HUGE_PREFIX_BYTES`, checks the
rest is UTF-8 as it streams past, and hands out a :class:`HugeLine` instead of its bytes.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field

_CR = b"\r"
HUGE_LINE_BYTES = 8 << 20  # longer lines are streamed past, not held: the live app runs several readers of one trace at once
HUGE_PREFIX_BYTES = 1 << 20  # what is kept of such a line: enough to decide its verdict exactly


@dataclass(slots=True)
class HugeLine:
    """A line over HUGE_LINE_BYTES: its size, its first bytes, and where its UTF-8 first breaks."""

    length: int  # bytes, without the "\n"
    prefix: bytes  # the first HUGE_PREFIX_BYTES
    bad_utf8_at: int | None = None  # offset in the line of the first byte that is not UTF-8
    bad_utf8: UnicodeDecodeError | None = None  # that error, as decoding the line there reports it
    error: BaseException | None = None  # what json.loads raises on it (parse.huge_line_error)
    _decoder: object = field(default=None, repr=False)

    def take(self, data: bytes) -> None:
        """Another piece of the line (after the prefix)."""
        if len(self.prefix) < HUGE_PREFIX_BYTES:
            room = HUGE_PREFIX_BYTES - len(self.prefix)
            self.prefix += data[:room]
        self._check(data)
        self.length += len(data)

    def _check(self, data: bytes, final: bool = False) -> None:
        if self.bad_utf8 is not None:
            return
        if self._decoder is None:
            self._decoder = codecs.getincrementaldecoder("utf-8")()
        decoder = self._decoder
        held = len(decoder.getstate()[0])  # bytes of a character cut by the last piece
        if not final and not held and data.isascii():
            return  # the common case (NULs, control characters) costs a scan, not a decode
        try:
            decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            self.bad_utf8_at = self.length - held + exc.start
            self.bad_utf8 = exc

    def finish(self) -> None:
        self._check(b"", final=True)
        self._decoder = None


def _head(pieces: list[bytes], size: int) -> bytes:
    """The first ``size`` bytes of the pieces' concatenation, without joining them all."""
    head, taken = [], 0
    for piece in pieces:
        head.append(piece[: size - taken])
        taken += len(head[-1])
        if taken >= size:
            break
    return b"".join(head)


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
    # When set, the batch's first line was too long to hold: it is this, and ``lines`` holds
    # only the lines after it (first_line/offset still count from it).
    huge: HugeLine | None = None


class LineFramer:
    """Cuts a byte stream into newline-terminated lines.

    Feed it bytes as they arrive (a live log) or a whole file in chunks
    (replay); both give the same lines. A trailing partial line is held back
    until its newline arrives or :meth:`close` is called. Lines have no length
    limit: a partial line is kept as a list of pieces, so a 50 MB line arriving
    in 64 KB reads costs one join, not a quadratic copy. Complete lines are
    never copied: the chunk is split once and only a carried-over head is joined.
    """

    def __init__(self, *, first_line: int = 1, offset: int = 0, huge_check=None) -> None:
        """``first_line``/``offset``: where the bytes fed start, when they are not the stream's start.
        ``huge_check(prefix) -> (decided, error)``: whether a line over HUGE_LINE_BYTES may be
        streamed past (see ``parse.huge_line_error``); without it every line is held whole."""
        self._huge_check = huge_check
        self._held_whole = False  # the pending line is huge but must be held: its head decides nothing
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._pending_may_split = False
        self._huge: HugeLine | None = None  # the pending line, once it passed HUGE_LINE_BYTES
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
        return self._huge.length if self._huge is not None else self._pending_size

    def _add_pending(self, piece: bytes, hit: bool) -> None:
        self._pending_may_split |= hit
        if self._huge is not None:
            self._huge.take(piece)
            return
        self._pending.append(piece)
        self._pending_size += len(piece)
        if self._pending_size > HUGE_LINE_BYTES and self._huge_check is not None and not self._held_whole:
            # Never joined whole here: a join would hold the line twice (64 MiB per reader of a
            # 1 GiB log, and the live screen runs several readers of one trace at once).
            decided, error = self._huge_check(_head(self._pending, HUGE_PREFIX_BYTES))
            if not decided:
                self._held_whole = True  # its pieces are joined once, when the line ends
                return
            huge = HugeLine(0, b"", error=error)  # from here on only its head is kept
            for held in self._pending:
                huge.take(held)
            self._huge = huge
            self._pending, self._pending_size = [], 0

    def _take_huge(self, last_piece: bytes) -> HugeLine:
        huge, self._huge = self._huge, None
        huge.take(last_piece)
        huge.finish()
        return huge

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
            self._add_pending(tail, hit)
            return None
        may_split = hit or self._pending_may_split
        carried = self.pending_bytes
        huge = None
        if self._huge is not None:
            huge = self._take_huge(lines.pop(0))
        elif self._pending:
            self._pending.append(lines[0])
            lines[0] = b"".join(self._pending)
        self._pending, self._pending_size, self._pending_may_split = [], 0, False
        self._held_whole = False
        if tail:
            self._add_pending(tail, hit)
        batch = LineBatch(self._next_line, self._next_offset, lines, True, may_split, huge)
        self._next_line += len(lines) + (huge is not None)
        self._next_offset += carried + len(data) - len(tail)
        return batch

    def close(self) -> LineBatch | None:
        """End of stream: hand out the unterminated last line, if there is one."""
        self.closed = True
        if self._huge is not None:
            huge = self._take_huge(b"")
            batch = LineBatch(self._next_line, self._next_offset, [], False, self._pending_may_split, huge)
            self._next_line += 1
            self._next_offset += huge.length
            return batch
        if not self._pending:
            return None
        data = b"".join(self._pending)
        self._pending = []
        self._pending_size = 0
        batch = LineBatch(self._next_line, self._next_offset, [data], False, self._pending_may_split)
        self._next_line += 1
        self._next_offset += len(data)
        return batch


def read_at_most(handle, limit: int) -> bytes:
    """Up to ``limit`` bytes of an open binary file. ``handle.read(limit)`` allocates ``limit``
    bytes before reading: with a cap of megabytes that costs more than reading a small sidecar
    (a fleet reads thousands), so this reads by the file's size, and on while the file grows."""
    try:
        step = max(os.fstat(handle.fileno()).st_size + 1, 1 << 16)
    except (OSError, AttributeError, ValueError):
        step = 1 << 16
    parts: list[bytes] = []
    left = limit
    while left > 0:
        chunk = handle.read(min(left, step))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)
