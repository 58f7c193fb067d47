"""The training wrapper's verdict (``native_tool_calls``), computed incrementally.

The seed's ``fetch_training_trace`` runs in phases, each over the whole log
before the next starts:

1. decode the bytes (``UnicodeDecodeError`` is a ``ValueError``: caught);
2. ``json.loads`` every non-blank ``str.splitlines()`` piece;
3. ``event.get("type")`` on every event, ``event["part"]`` for ``tool_use``;
4. ``part["callID"]`` for every part;
5. some event has type ``step_finish``;
6. no falsy id, every id hashable, no id twice;
7. every part's ``state.get("status")`` is ``completed`` or ``error``.

The first exception ends the rule. So the outcome is decided by the earliest
phase that fails anywhere in the stream, and within that phase by the first
failing item. This machine keeps the first failure of every phase as the
bytes stream by and combines them at the end, which gives exactly the seed's
answer without holding the events in memory. Each check is the seed's own
expression evaluated on the same value, so the exception it raises (type and
message) is the seed's too.
"""

from __future__ import annotations

from dataclasses import dataclass

from smoldata_tui.trace.parse import shared_nan

CAUGHT = (OSError, ValueError, KeyError, TypeError)  # the seed's except clause
_SETTLED = {"completed", "error"}

PHASE_DECODE = 1
PHASE_JSON = 2
PHASE_PARTS = 3
PHASE_IDS = 4
PHASE_STEP_FINISH = 5
PHASE_ID_VALUES = 6
PHASE_STATUS = 7


@dataclass(frozen=True, slots=True)
class Failure:
    """The first thing that failed in one phase of the seed's rule."""

    phase: int
    line: int | None  # 1-based physical line; None for stream-wide failures
    exception: BaseException
    explanation: str
    message: str | None = None  # the exception's text where it differs from str(exception)

    @property
    def crashes(self) -> bool:
        return not isinstance(self.exception, CAUGHT)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What ``turn.metadata["native_tool_calls"]`` becomes, and why."""

    native_tool_calls: int | None
    failure: Failure | None = None

    @property
    def wrapper_crash(self) -> str | None:
        """The exception class that escapes the wrapper, or None."""
        if self.failure is not None and self.failure.crashes:
            return type(self.failure.exception).__name__
        return None

    @property
    def reason(self) -> str | None:
        """``"ValueError: Unfinished tool action"``-style reason, or None for an int."""
        if self.failure is None:
            return None
        exc = self.failure.exception
        return f"{type(exc).__name__}: {self.failure.message or exc}"

    def badge(self) -> str:
        """One line for headers and tables."""
        if self.failure is None:
            return f"native_tool_calls = {self.native_tool_calls}"
        where = f" (line {self.failure.line})" if self.failure.line else ""
        if self.failure.crashes:
            return f"wrapper would crash — {self.reason}{where}"
        return f"None — {self.reason}{where}"


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _as_in_log(exc: UnicodeDecodeError, terminated: bool) -> UnicodeDecodeError:
    """The error decoding the log raises at the same byte (positions from that byte)."""
    bad = exc.object[exc.start : exc.end]
    if terminated and exc.end == len(exc.object):
        try:
            (bad + b"\n").decode(exc.encoding)
        except UnicodeDecodeError as in_log:
            return in_log
    return UnicodeDecodeError(exc.encoding, bad, 0, len(bad), exc.reason)


def _decode_message(exc: UnicodeDecodeError, position: int) -> str:
    """``str(exc)`` as if ``exc.start`` were ``position`` (CPython's two wordings)."""
    width = exc.end - exc.start
    if width == 1:
        byte = exc.object[exc.start]
        return f"'{exc.encoding}' codec can't decode byte 0x{byte:02x} in position {position}: {exc.reason}"
    last = position + width - 1
    return f"'{exc.encoding}' codec can't decode bytes in position {position}-{last}: {exc.reason}"


def _repeat(call_id: object, line: int, first_line: int) -> Failure:
    return Failure(
        PHASE_ID_VALUES,
        line,
        ValueError("Missing or repeated tool action IDs"),
        f"callID {_describe(call_id)} on line {line} repeats the one on line {first_line}",
    )


class VerdictMachine:
    """Feed it what the seed's phases see, in stream order; ask for the verdict at any time."""

    def __init__(self) -> None:
        self._first: dict[int, Failure] = {}
        self._ids_seen: dict[object, int] = {}
        self._calls = 0
        self._has_step_finish = False
        self._falsy_id: Failure | None = None
        self._unhashable_id: Failure | None = None
        self._repeated_id: Failure | None = None

    # --- phase 1 and 2 -------------------------------------------------------------------
    def undecodable(self, line: int, exc: UnicodeDecodeError, stream_offset: int, *, terminated: bool) -> None:
        """A line's first bad UTF-8 byte is at ``stream_offset`` of the log; ``exc`` is decoding the line's.

        The wrapper decodes the whole log, so its message counts positions from the
        log's start, and a character cut at the end of a line meets the ``\\n`` after
        it ("invalid continuation byte", not "unexpected end of data").
        """
        if PHASE_DECODE in self._first:
            return
        log_exc = _as_in_log(exc, terminated)
        self._first[PHASE_DECODE] = Failure(
            PHASE_DECODE,
            line,
            log_exc,
            f"byte {stream_offset} is not valid UTF-8, so decoding the log fails",
            _decode_message(log_exc, stream_offset),
        )

    def unparsable(self, line: int, exc: BaseException) -> None:
        self._note(PHASE_JSON, line, exc, f"json.loads fails on line {line}")

    # --- phases 3 to 7, one parsed value at a time ----------------------------------------
    def event(self, line: int, event: object, *, exact: bool = True) -> bool:
        """Take one parsed event; False (and nothing recorded) if it needs exact re-parsing.

        ``exact=False`` says the value came from orjson, which reads integers
        beyond 64 bits as floats. That matters where a value's type reaches an
        exception message (a non-object event, part or state) or where a callID
        is compared by value; such events are asked for again, read by ``json``.
        """
        if not exact and type(event) is not dict:
            return False
        first = self._first
        try:
            kind = event.get("type")  # type: ignore[attr-defined]
        except Exception as exc:  # not a JSON object: AttributeError escapes the wrapper
            if PHASE_PARTS not in first:
                self._note(PHASE_PARTS, line, exc, f"line {line} is {type(event).__name__}, not an object")
            return True
        if kind == "step_finish":
            self._has_step_finish = True
            return True
        if kind != "tool_use":
            return True
        try:
            part = event["part"]  # type: ignore[index]
        except Exception as exc:
            if PHASE_PARTS not in first:
                self._note(PHASE_PARTS, line, exc, f"tool_use on line {line} has no part")
            return True
        if not exact and type(part) is not dict:
            return False
        try:
            call_id = part["callID"]
        except Exception as exc:
            self._calls += 1
            if PHASE_IDS not in first:
                self._note(PHASE_IDS, line, exc, f"the tool part on line {line} has no callID to read")
            return True
        if not exact and (type(call_id) is float or type(part.get("state", {})) is not dict):
            return False
        self._calls += 1
        self._check_id(line, call_id)
        if PHASE_STATUS not in first:
            try:
                unfinished = part.get("state", {}).get("status") not in _SETTLED
            except Exception as exc:
                self._note(PHASE_STATUS, line, exc, f"the tool state on line {line} cannot be read")
            else:
                if unfinished:
                    self._note(
                        PHASE_STATUS,
                        line,
                        ValueError("Unfinished tool action"),
                        f"the call on line {line} is not completed or error",
                    )
        return True

    def _check_id(self, line: int, call_id: object) -> None:
        # Phase 6 is three checks, each over all ids: any falsy id, then set(ids)
        # (raising on the first unhashable id), then a size mismatch (a repeat).
        if not call_id:
            if self._falsy_id is None:
                self._falsy_id = Failure(
                    PHASE_ID_VALUES,
                    line,
                    ValueError("Missing or repeated tool action IDs"),
                    f"callID {_describe(call_id)} on line {line} is falsy",
                )
            return
        try:
            first_line = self._ids_seen.get(call_id)
        except TypeError as exc:
            if self._unhashable_id is None:
                self._unhashable_id = Failure(
                    PHASE_ID_VALUES,
                    line,
                    exc,
                    f"callID on line {line} is a {type(call_id).__name__}",
                )
            return
        if first_line is None:
            self._ids_seen[call_id] = line
        elif self._repeated_id is None:
            self._repeated_id = _repeat(call_id, line, first_line)

    def _note(self, phase: int, line: int | None, exc: BaseException, why: str) -> None:
        """Keep the first failure of a phase."""
        if phase not in self._first:
            self._first[phase] = Failure(phase, line, exc, why)

    def merge(self, later: VerdictMachine) -> None:
        """Continue with the next part of the stream, analysed on its own.

        Every phase keeps its first failure, so the earlier part's wins. Ids are
        the only state that crosses parts: an id of ``later`` seen here is a repeat.
        """
        for phase, failure in later._first.items():
            self._first.setdefault(phase, failure)
        self._calls += later._calls
        self._has_step_finish = self._has_step_finish or later._has_step_finish
        self._falsy_id = self._falsy_id or later._falsy_id
        self._unhashable_id = self._unhashable_id or later._unhashable_id
        repeats = [failure for failure in (self._repeated_id, later._repeated_id) if failure is not None]
        for call_id in [key for key in self._ids_seen if key != key]:  # NaN keys that were pickled
            self._ids_seen.setdefault(shared_nan(call_id), self._ids_seen.pop(call_id))
        for call_id, line in later._ids_seen.items():
            call_id = shared_nan(call_id)
            first_line = self._ids_seen.get(call_id)
            if first_line is None:
                self._ids_seen[call_id] = line
            elif not repeats or line < repeats[-1].line:
                repeats.append(_repeat(call_id, line, first_line))
        self._repeated_id = min(repeats, key=lambda failure: failure.line) if repeats else None

    def verdict(self) -> Verdict:
        """The verdict if the stream ended now."""
        first = dict(self._first)
        id_failure = self._falsy_id or self._unhashable_id or self._repeated_id
        if id_failure is not None:
            first[PHASE_ID_VALUES] = id_failure
        if not self._has_step_finish:
            first[PHASE_STEP_FINISH] = Failure(
                PHASE_STEP_FINISH,
                None,
                ValueError("Incomplete OpenCode event stream"),
                "no step_finish event anywhere in the log",
            )
        if first:
            return Verdict(None, first[min(first)])
        return Verdict(self._calls)
