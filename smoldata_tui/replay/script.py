"""A recorded episode as the model's side of the conversation: what to answer at each turn.

An OpenCode trace (``run --format json``) records every step as one assistant message: its
reasoning, its text, its tool calls (name, input, call id, and what the tool returned) and its
``step_finish`` (reason and token counts). :class:`ReplayScript` turns that back into the
sequence of chat-completion answers the model gave, so that :mod:`replay_server` can give them
again and OpenCode re-executes the same calls against today's environment.

What cannot come back exactly is noted in ``ReplayScript.notes`` rather than refused:

* a call OpenCode recorded as tool ``invalid`` (unknown tool, or arguments that were not JSON)
  keeps the attempted tool name; its raw arguments survive only inside the JSON-parse error
  message, otherwise ``{}`` is sent;
* a step cut off before the model produced anything (a lone ``step_start`` before an
  ``error``) is left out;
* a ``step_finish`` reason without an OpenAI equivalent becomes ``tool_calls`` or ``stop``
  (a stream without any finish reason would make OpenCode loop forever);
* only the first session of a file holding several is used.

Pure: no I/O beyond reading the trace, no Textual.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

__all__ = ["ReplayCall", "ReplayScript", "ReplayTurn"]

# step_finish.reason (AI SDK names) → OpenAI finish_reason.
_FINISH_REASONS = {
    "tool-calls": "tool_calls",
    "stop": "stop",
    "length": "length",
    "content-filter": "content_filter",
}
# OpenCode's message for arguments that are not JSON keeps the raw text the model sent.
_RAW_ARGUMENTS = re.compile(r"JSON parsing failed: Text: (.*)\.\nError message:", re.DOTALL)
# The read tool's output starts with the absolute path it read.
_READ_PATH = re.compile(r"^<path>([^<\n]+)</path>")


@dataclass(frozen=True)
class ReplayCall:
    """One tool call of a recorded turn."""

    call_id: str
    name: str  # the tool the model asked for
    arguments: str  # the arguments as JSON text, as the model sent them
    output: str | None  # what the tool returned in the recording (output or error); None if it never settled
    status: str | None  # "completed" / "error" in the recording, else None


@dataclass(frozen=True)
class ReplayTurn:
    """One assistant message: the answer to the model request at this position."""

    index: int  # 0-based
    text: str
    reasoning: str
    calls: tuple[ReplayCall, ...]
    finish_reason: str  # OpenAI finish_reason
    usage: dict | None  # OpenAI usage object, None when the provider sent none
    step: int = 0  # the recorded step it came from, counted from 1 as the timeline counts (0: not recorded)


@dataclass
class ReplayScript:
    turns: list[ReplayTurn]
    session_id: str | None = None
    workdir: str | None = None  # the recording's working directory, when the trace reveals it
    notes: list[str] = field(default_factory=list)
    steps: int = 0  # the recorded steps, cut-off ones included: a fork's step numbers go up to this

    @classmethod
    def from_trace(cls, source: bytes | str | os.PathLike[str]) -> ReplayScript:
        """Build the script from a trace: its bytes, or the path of its file."""
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        notes: list[str] = []
        events = []
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                notes.append(f"line {number} is not JSON; skipped")
                continue
            if isinstance(event, dict):
                events.append(event)
        return cls.from_events(events, notes=notes)

    @classmethod
    def from_events(cls, events: Iterable[dict], *, notes: list[str] | None = None) -> ReplayScript:
        notes = list(notes or [])
        steps: dict[str, _Step] = {}  # by messageID, in order of appearance
        session_id = None
        other_sessions = False
        for event in events:
            part = event.get("part")
            if not isinstance(part, dict) or not isinstance(part.get("messageID"), str):
                continue
            sid = event.get("sessionID")
            if session_id is None:
                session_id = sid
            elif sid != session_id:
                other_sessions = True
                continue
            steps.setdefault(part["messageID"], _Step()).add(event.get("type"), part)
        if other_sessions:
            notes.append(f"the trace holds other sessions than {session_id}; only that one is replayed")

        turns: list[ReplayTurn] = []
        used_ids: set[str] = set()
        for number, step in enumerate(steps.values(), start=1):
            if step.is_empty():
                notes.append(f"step {number} was cut off before the model answered; left out")
                continue
            turns.append(step.turn(len(turns), number, used_ids, notes))
        return cls(turns, session_id, _recorded_workdir(steps.values()), notes, len(steps))


class _Step:
    """The parts of one recorded assistant message, gathered while reading."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []  # (part id, text)
        self.reasonings: list[tuple[str, str]] = []
        self.tools: list[dict] = []
        self.finish: dict | None = None

    def add(self, kind: object, part: dict) -> None:
        part_id = part.get("id") if isinstance(part.get("id"), str) else ""
        if kind == "text" and isinstance(part.get("text"), str):
            self.texts.append((part_id, part["text"]))
        elif kind == "reasoning" and isinstance(part.get("text"), str):
            self.reasonings.append((part_id, part["text"]))
        elif kind == "tool_use":
            self.tools.append(part)
        elif kind == "step_finish":
            self.finish = part

    def is_empty(self) -> bool:
        return not (self.texts or self.reasonings or self.tools or self.finish)

    def turn(self, index: int, number: int, used_ids: set[str], notes: list[str]) -> ReplayTurn:
        # Parallel calls are written in completion order; part ids give the order of the calls.
        tools = sorted(self.tools, key=lambda part: part.get("id") if isinstance(part.get("id"), str) else "")
        calls = tuple(_call(part, number, len(used_ids), used_ids, notes) for part in tools)
        reason = self.finish.get("reason") if self.finish else None
        finish = _FINISH_REASONS.get(reason) if isinstance(reason, str) else None
        if finish is None:
            finish = "tool_calls" if calls else "stop"
            notes.append(f"step {number} has finish reason {reason!r}; answered with {finish!r}")
        return ReplayTurn(
            index=index,
            text="".join(text for _, text in sorted(self.texts)),
            reasoning="".join(text for _, text in sorted(self.reasonings)),
            calls=calls,
            finish_reason=finish,
            usage=_usage(self.finish.get("tokens") if self.finish else None),
            step=number,
        )


def _call(part: dict, step: int, ordinal: int, used_ids: set[str], notes: list[str]) -> ReplayCall:
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    tool = part.get("tool") if isinstance(part.get("tool"), str) else "invalid"
    tool_input = state.get("input") if isinstance(state.get("input"), dict) else {}
    arguments = orjson.dumps(tool_input).decode()
    if tool == "invalid":
        tool, arguments = _invalid_call(tool_input, step, notes)

    call_id = part.get("callID")
    if not isinstance(call_id, str) or not call_id or call_id in used_ids:
        # OpenCode needs a usable, unique id to answer the call; the recording had none.
        replacement = f"call_replay_{ordinal}"
        notes.append(f"step {step}: call id {call_id!r} is missing or repeated; sent as {replacement}")
        call_id = replacement
    used_ids.add(call_id)

    status = state.get("status") if isinstance(state.get("status"), str) else None
    if status == "completed" and isinstance(state.get("output"), str):
        output = state["output"]
    elif status == "error" and isinstance(state.get("error"), str):
        output = state["error"]
    else:
        output, status = None, None
    return ReplayCall(call_id, tool, arguments, output, status)


def _invalid_call(tool_input: dict, step: int, notes: list[str]) -> tuple[str, str]:
    name = tool_input.get("tool") if isinstance(tool_input.get("tool"), str) else "invalid"
    error = tool_input.get("error") if isinstance(tool_input.get("error"), str) else ""
    raw = _RAW_ARGUMENTS.search(error)
    if raw:
        return name, raw.group(1)
    notes.append(f"step {step}: the arguments of the invalid call to {name!r} were not recorded; sent as {{}}")
    return name, "{}"


def _usage(tokens: object) -> dict | None:
    # OpenCode's tokens.input excludes cached tokens and tokens.output excludes reasoning; the
    # OpenAI usage object counts both in, with the parts in *_details.
    if not isinstance(tokens, dict) or "total" not in tokens:
        return None
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    numbers = {
        "input": tokens.get("input"),
        "output": tokens.get("output"),
        "reasoning": tokens.get("reasoning", 0),
        "cached": cache.get("read", 0),
    }
    if not all(isinstance(value, int) and value >= 0 for value in numbers.values()):
        return None
    prompt = numbers["input"] + numbers["cached"]
    completion = numbers["output"] + numbers["reasoning"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": numbers["cached"]},
        "completion_tokens_details": {"reasoning_tokens": numbers["reasoning"]},
    }


def _recorded_workdir(steps: Iterable[_Step]) -> str | None:
    """The directory a relative ``filePath`` was resolved against, if any call shows it."""
    for step in steps:
        for part in step.tools:
            state = part.get("state")
            if not isinstance(state, dict) or not isinstance(state.get("input"), dict):
                continue
            relative = state["input"].get("filePath")
            if not isinstance(relative, str) or not relative or relative.startswith("/"):
                continue
            metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
            read = _READ_PATH.match(state.get("output") or "") if isinstance(state.get("output"), str) else None
            for absolute in (metadata.get("filepath"), read.group(1) if read else None):
                suffix = "/" + os.path.normpath(relative)
                if isinstance(absolute, str) and absolute.endswith(suffix) and len(absolute) > len(suffix):
                    return absolute[: -len(suffix)]
    return None
