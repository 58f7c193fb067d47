"""Turn one newline-framed line into JSON values, two ways.

The fast way is ``orjson.loads`` on the bytes. It is only trusted where it
provably agrees with what the training wrapper does with the same bytes
(``bytes.decode()``, ``str.splitlines()``, ``str.strip()``, ``json.loads``).
Everywhere else :func:`parse_exactly` repeats the wrapper's own steps.

Where the two could disagree, and how the fast path notices:

* ``str.splitlines()`` also breaks at ``\\r``, ``\\v``, ``\\f``, ``\\x1c-\\x1e``,
  U+0085, U+2028 and U+2029. Raw control characters are invalid JSON, so a line
  orjson accepts can only hold ``\\r`` (as whitespace) or the three non-ASCII
  ones (raw, inside strings, as OpenCode writes them): :func:`wrapper_may_split`.
* Integers beyond 64 bits become floats in orjson but ints in ``json``; only
  callIDs are compared by value, so a numeric callID is re-read exactly
  (the caller decides, see ``analysis``).
* ``json.loads`` recurses once per nesting level and raises ``RecursionError``
  (uncaught by the wrapper) around 1,000 levels, the exact depth depending on
  the caller's stack; orjson stops at 1,024. Lines that might nest that deep
  are re-read exactly: :func:`may_nest_deeply`.
* Everything orjson rejects (NaN, lone surrogate escapes, huge numbers, bad
  UTF-8, a BOM, ...) is re-read exactly, so json's leniency is kept.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass, field

# A line orjson accepts can contain these and still be cut by str.splitlines().
_CR = b"\r"
_NON_ASCII_BREAKS = (b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_BREAK_NAMES = {
    "\n": "LF",
    "\r": "CR",
    "\x0b": "VT (\\x0b)",
    "\x0c": "FF (\\x0c)",
    "\x1c": "FS (\\x1c)",
    "\x1d": "GS (\\x1d)",
    "\x1e": "RS (\\x1e)",
    "\x85": "NEL (U+0085)",
    "\u2028": "LINE SEPARATOR (U+2028)",
    "\u2029": "PARAGRAPH SEPARATOR (U+2029)",
}
# Shallower than this, json.loads never recurses out (it does at ~990 levels from a shallow stack),
# so such lines may keep the fast path; each level costs at least two bytes.
DEEP_NESTING = 800


def wrapper_may_split(line: bytes) -> bool:
    """Whether ``str.splitlines()`` could cut this (orjson-valid) line."""
    return _CR in line or any(mark in line for mark in _NON_ASCII_BREAKS)


def may_nest_deeply(line: bytes, bytes_outside_strings: int) -> bool:
    """Whether the line could nest deep enough for json.loads to recurse out.

    Each level costs at least two bytes outside strings, so a line whose bytes
    outside its known strings are few needs no counting (the usual case).
    """
    if bytes_outside_strings <= 2 * DEEP_NESTING:
        return False
    return line.count(b"[") + line.count(b"{") > DEEP_NESTING


def shared_nan(value: object) -> object:
    """``json`` returns one shared NaN object, so the wrapper's set() sees NaN ids as one.

    A NaN that crossed a process boundary is a new object; this gives it back the identity.
    """
    if type(value) is float and value != value:
        return json.decoder.NaN
    return value


@dataclass(slots=True)
class Piece:
    """One piece of a line as the wrapper sees it: a parsed value or the exception."""

    text: str
    value: object = None
    error: BaseException | None = None


@dataclass(slots=True)
class ExactLine:
    """A line read with the wrapper's own semantics."""

    decode_error: UnicodeDecodeError | None
    pieces: list[Piece]  # the wrapper's non-blank splitlines() pieces, in order
    events: list[Piece]  # what a newline-framed reader (the timeline) shows
    breaks: list[str] = field(default_factory=list)  # names of the extra line breaks found

    @property
    def split_differently(self) -> bool:
        """The wrapper's pieces are not the single newline-framed line a reader sees."""
        if not self.breaks or self.pieces is self.events:
            return False
        if all(item.error is not None for item in (*self.pieces, *self.events)):
            return False  # malformed whichever way it is cut
        if len(self.pieces) == len(self.events) == 1:
            piece, event = self.pieces[0], self.events[0]
            if piece.error is None and event.error is None and piece.value == event.value:
                return False  # e.g. a CRLF line ending: same value either way
        return True


def _load(text: str) -> Piece:
    try:
        return Piece(text, json.loads(text))
    except Exception as exc:  # ValueError is caught by the wrapper, RecursionError is not
        return Piece(text, error=exc)


def parse_exactly(line: bytes) -> ExactLine:
    """Read one line (without its ``\\n``) exactly as the wrapper would."""
    decode_error = None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        decode_error = exc
        text = line.decode("utf-8", "replace")
    pieces = [_load(piece) for piece in text.splitlines() if piece.strip()]
    # one substring search per break character (in C), not a Python step per character of the line
    breaks = sorted(name for ch, name in _BREAK_NAMES.items() if ch != "\n" and ch in text)
    if len(pieces) == 1 and pieces[0].text == text:
        events = pieces
    elif not pieces:
        events = []
    else:
        # A reader that frames by newline sees one event; show the wrapper's pieces
        # instead only when they hold events the whole line does not.
        whole = _load(text)
        salvaged = whole.error is not None and any(piece.error is None for piece in pieces)
        events = pieces if salvaged else [whole]
    return ExactLine(decode_error, pieces, events, breaks)


HUGE_LOOKAHEAD = 64  # json's scanner looks at most this far past the character it fails on


def huge_line_error(prefix: bytes) -> tuple[bool, BaseException | None]:
    """What the wrapper's ``json.loads`` fails with on a line known only by its first bytes.

    ``(True, exc)``: every line that starts with ``prefix`` (and is valid UTF-8) makes the
    wrapper raise ``exc`` at its first failing piece, whatever follows; ``(True, None)``:
    ``prefix`` is not UTF-8, so decoding the log fails first. ``(False, None)``: the prefix
    cannot tell, and the line must be read whole. json's scanner reads left to right and looks
    at most HUGE_LOOKAHEAD characters past the one it fails on; only an unterminated string is
    reported where it started rather than where the text ran out, so that error never decides
    (tests/test_huge_lines.py checks this against the wrapper's rule).
    """
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(prefix, False)
    except UnicodeDecodeError:
        return True, None
    ended = text.splitlines(keepends=True)
    for number, (piece, body) in enumerate(zip(ended, text.splitlines()), start=1):
        complete = len(piece) > len(body) or number < len(ended)
        if not body.strip():
            if complete:
                continue
            return False, None
        try:
            json.loads(body)
        except RecursionError as exc:  # the descent happens within the prefix, as it would in the line
            return True, exc
        except ValueError as exc:
            if complete:
                return True, exc
            decided = (
                isinstance(exc, json.JSONDecodeError)
                and not exc.msg.startswith("Unterminated string")
                and exc.pos < len(body) - HUGE_LOOKAHEAD
            )
            return (True, exc) if decided else (False, None)
        else:
            if not complete:
                return False, None
    return False, None
