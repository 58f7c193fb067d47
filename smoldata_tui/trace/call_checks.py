"""Per-call findings: missing, duplicate and unfinished callIDs, tool errors, invalid tools."""

from __future__ import annotations

import re
from collections.abc import Callable

from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.parse import shared_nan
from smoldata_tui.trace.text import clip

AddFinding = Callable[..., Finding]

# What OpenCode 1.18.31's bash tool appends to the output of a command its own `timeout` killed
# (status stays "completed", metadata.exit is null).
_BASH_TIMEOUT = re.compile(r"terminated command after exceeding timeout (\d+) ms")


def bash_timeout_ms(part: dict) -> int | None:
    """The timeout (ms) that killed this bash call, or None when it was not killed by one."""
    if part.get("tool") != "bash":
        return None
    state = part.get("state")
    if type(state) is not dict or state.get("status") != "completed":
        return None
    metadata = state.get("metadata")
    if type(metadata) is dict and metadata.get("exit") is not None:
        return None
    output = state.get("output")
    if type(output) is not str or "<shell_metadata>" not in output:
        return None
    found = _BASH_TIMEOUT.search(output, output.rfind("<shell_metadata>"))
    return int(found.group(1)) if found else None


def _falsy_name(value: object) -> str:
    if value is None:
        return "null"
    if value == "":
        return '""'
    return f"{clip(repr(value), 20)}, which is falsy"


def _fingerprint(state: object) -> int:
    """Enough of a call's state to tell an identical re-emission from a changed one, cheaply.

    A hash, so that the first occurrences of a part analysed in another process pickle
    small; check's workers are forked, so they share this process's hash seed.
    """
    if type(state) is not dict:
        return hash(repr(state)[:100])
    output = state.get("output")
    time = state.get("time")
    if type(time) is dict:
        time = (time.get("start"), time.get("end"))
    try:
        return hash((state.get("status"), state.get("title"), len(output) if type(output) is str else None,
                     time, state.get("error")))  # fmt: skip
    except TypeError:  # an unhashable value somewhere in an odd state
        return hash(repr(state)[:200])


def _part_id(part: dict) -> int:
    part_id = part.get("id")
    try:
        return hash(part_id)
    except TypeError:
        return hash(repr(part_id))


def _shifted(occurrence: tuple, base: int) -> tuple:
    line, index, *rest = occurrence
    return (line, index + base, *rest)


def _tool_name(part: dict) -> str:
    return clip(str(part.get("tool")), 40)


class CallChecks:
    """Checks every ``tool_use`` part; remembers each callID's first occurrence."""

    def __init__(self, add: AddFinding) -> None:
        self._add = add
        # callID -> (line, event index, part id, tool, fingerprint) of its first occurrence
        self.first_seen: dict[object, tuple] = {}
        # every repeat: (callID, line, event index, part id, tool, fingerprint, its finding)
        self.repeats: list[tuple] = []

    def check_part(self, line: int, index: int, event: dict) -> dict | None:
        """The tool_use event's part, or None after reporting that it has no usable one."""
        part = event.get("part")
        if type(part) is not dict:
            what = "no part" if "part" not in event else f"a {type(part).__name__} part"
            self._add("bad_part", Severity.ERROR, line, index, f"tool_use with {what}; the training wrapper gives None")
            return None
        return part

    def tool_use(self, line: int, index: int, event: dict) -> None:
        add = self._add
        part = self.check_part(line, index, event)
        if part is None:
            return
        state = part.get("state")
        call_id = part.get("callID")
        if not call_id:
            how = "has no callID" if "callID" not in part else f"has callID {_falsy_name(call_id)}"
            add(
                "missing_call_id",
                Severity.ERROR,
                line,
                index,
                f"{_tool_name(part)} call {how}; the training wrapper gives None",
            )
        else:
            self._check_duplicate(line, index, part, call_id, state)
        if type(state) is not dict:
            self._bad_state(line, index, part, state)
            return
        status = state.get("status")
        if status == "completed":
            if part.get("tool") == "invalid":
                self._invalid_tool(line, index, state)
                return
            metadata = state.get("metadata")
            if type(metadata) is dict:
                code = metadata.get("exit")
                if code and type(code) is int:
                    add("nonzero_exit", Severity.INFO, line, index, f"{_tool_name(part)} exited with {code}")
                elif code is None:
                    self._timed_out(line, index, part, state)
        elif status == "error":
            add(
                "tool_error",
                Severity.WARNING,
                line,
                index,
                f"{_tool_name(part)} failed: {clip(str(state.get('error', '')), 200)}",
            )
            if part.get("tool") == "invalid":
                self._invalid_tool(line, index, state)
        else:
            add(
                "unfinished_call",
                Severity.ERROR,
                line,
                index,
                f"{_tool_name(part)} call never finished: status {clip(repr(status), 30)}",
            )

    def _timed_out(self, line: int, index: int, part: dict, state: dict) -> None:
        timeout = bash_timeout_ms(part)
        if timeout is None:
            return
        tool_input = state.get("input")
        command = tool_input.get("command") if type(tool_input) is dict else None
        shown = f" `{clip(str(command).splitlines()[0] if command else '', 60)}`" if command else ""
        self._add(
            "bash_timeout",
            Severity.WARNING,
            line,
            index,
            f"bash{shown} was killed by its own timeout ({timeout:,} ms) before it finished; OpenCode still "
            "records the call as completed (exit code null)",
        )

    def _bad_state(self, line: int, index: int, part: dict, state: object) -> None:
        if "state" not in part:
            self._add("unfinished_call", Severity.ERROR, line, index, f"{_tool_name(part)} call has no state")
            return
        self._add(
            "wrapper_crash",
            Severity.ERROR,
            line,
            index,
            f"{_tool_name(part)} call's state is {clip(repr(state), 30)}, not an object; the training "
            "wrapper calls .get() on it and crashes (AttributeError)",
        )

    def _invalid_tool(self, line: int, index: int, state: dict) -> None:
        detail = state.get("output") or state.get("error") or ""
        self._add(
            "invalid_tool",
            Severity.WARNING,
            line,
            index,
            "the model called an unknown tool or sent arguments that are not JSON"
            + (f": {clip(str(detail), 160)}" if detail else ""),
        )

    def _check_duplicate(self, line: int, index: int, part: dict, call_id: object, state: object) -> None:
        try:
            first = self.first_seen.get(call_id)
        except TypeError:
            return  # an unhashable id: the verdict explains it
        occurrence = (line, index, _part_id(part), part.get("tool"), _fingerprint(state))
        if first is None:
            self.first_seen[call_id] = occurrence
        else:
            finding = self._duplicate(call_id, occurrence, first)
            self.repeats.append((call_id, occurrence, finding))

    def _duplicate(self, call_id: object, occurrence: tuple, first: tuple) -> Finding:
        line, index, part_id, tool, fingerprint = occurrence
        first_line, _, first_part_id, first_tool, first_fingerprint = first
        if first_part_id == part_id:
            how = (
                "an identical re-emission of the same part"
                if first_fingerprint == fingerprint
                else "the same part re-emitted with different content"
            )
        else:
            how = f"a different call ({clip(str(tool), 30)}) reusing the id of a {clip(str(first_tool), 30)} call"
        return self._add(
            "duplicate_call_id",
            Severity.ERROR,
            line,
            index,
            f"callID {clip(str(call_id), 60)} repeats the one on line {first_line}: {how}",
            first_line,
        )

    def shift_events(self, base: int) -> None:
        """Renumber event indices by ``base`` (this part started after ``base`` events)."""
        self.first_seen = {key: _shifted(occurrence, base) for key, occurrence in self.first_seen.items()}
        self.repeats = [(key, _shifted(occurrence, base), finding) for key, occurrence, finding in self.repeats]

    def merge(self, later: CallChecks, dropped: set[int]) -> None:
        """Continue with the calls of the stream's next part (analysed on its own).

        A repeat inside ``later`` may really repeat an id first seen here: its
        finding is redone against the true first occurrence (the old one's id()
        goes into ``dropped``). A first occurrence in ``later`` of an id seen
        here becomes a repeat.
        """
        earlier = self.first_seen
        for call_id in [key for key in earlier if key != key]:  # NaN keys that were pickled
            earlier.setdefault(shared_nan(call_id), earlier.pop(call_id))
        for call_id, occurrence in later.first_seen.items():
            call_id = shared_nan(call_id)
            first = earlier.get(call_id)
            if first is None:
                earlier[call_id] = occurrence
            else:
                self.repeats.append((call_id, occurrence, self._duplicate(call_id, occurrence, first)))
        for call_id, occurrence, finding in later.repeats:
            call_id = shared_nan(call_id)
            first = earlier[call_id]
            if first[0] != finding.related_line:
                dropped.add(id(finding))
                finding = self._duplicate(call_id, occurrence, first)
            self.repeats.append((call_id, occurrence, finding))
