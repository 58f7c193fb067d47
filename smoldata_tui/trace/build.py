"""Build OpenCode 1.18.31 ``run --format json`` events, for tests, samples and benchmarks.

The shapes follow ``docs/trace-format.md`` (what OpenCode 1.18.31 writes):

* every event is ``{"type", "timestamp", "sessionID", ...}``; part events add ``part``,
  ``error`` events add ``error``;
* ``part.sessionID == sessionID``; ``part.id`` (``prt_…``) and ``part.messageID`` (``msg_…``)
  sort in creation order, like OpenCode's ascending identifiers (12 hex digits of
  ``ms * 0x1000 + counter``, then 14 base-62 characters);
* a step is one assistant message: ``step_start`` → (``reasoning``) → ``text`` →
  ``tool_use``×N → ``step_finish``.

Everything is deterministic: ids, call ids and snapshots come from a ``random.Random`` seeded with
the session id, and time comes from a fake clock (``clock_ms``) that every method advances by a
fixed rule. Two builders fed the same calls produce the same bytes.

Every method returns the event dict it appended (the very object in ``events``), so a test that
needs an odd shape can build a normal event and then mutate it.

Example::

    b = TraceBuilder()
    b.step_start()
    b.text("Let me look at the input.")
    b.bash("ls /home/user/input", "sales_2024.csv\\n")
    b.step_finish("tool-calls")
    data = b.dumps()  # the bytes OpenCode would have written to stdout

No I/O and no Textual here: only the standard library and orjson.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from smoldata_tui.trace.build_ids import IdMaker
from smoldata_tui.trace.build_json import dumps_event, js_number
from smoldata_tui.trace.build_tool_state import (
    bash_metadata_output,
    describe_command,
    tool_state,
)

__all__ = [
    "ABSENT",
    "AUTO",
    "TraceBuilder",
]


class _Sentinel:
    """A named marker value for arguments where ``None`` already means JSON ``null``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: Let the builder choose the value (the realistic default).
AUTO: Any = _Sentinel("AUTO")
#: Leave the key out of the event entirely (as opposed to ``None``, which writes ``null``).
ABSENT: Any = _Sentinel("ABSENT")

# A rough stand-in for the system prompt and tool schemas the model sees on every step.
_SYSTEM_PROMPT_TOKENS = 9_000
_CHARS_PER_TOKEN = 4


class TraceBuilder:
    """Accumulates the event stream of one ``opencode run --format json`` session."""

    def __init__(
        self,
        session_id: str = "ses_4892557ffffeJq7Vd2KxP9mTnR",
        start_ms: int = 1767225600000,  # 2026-01-01T00:00:00Z
        model_ms_per_step: int = 1200,
    ) -> None:
        self.session_id = session_id
        self.clock_ms = start_ms
        self.model_ms_per_step = model_ms_per_step
        self.events: list[dict] = []

        # Seeded by the session id so two sessions in one file get different call ids.
        self._ids = IdMaker(session_id)
        self._message_id: str | None = None  # the open step's message, if any
        self._model_time_pending = False  # the open step has not yet "generated" anything
        self._steps_started = 0
        # Rough token accounting so step_finish can report plausible numbers by default.
        self._context_chars = 0  # everything earlier steps added to the conversation
        self._step_generated_chars = 0  # what the model wrote in the open step
        self._step_tool_output_chars = 0  # what tools returned in the open step

    # ------------------------------------------------------------------ ids and time

    def new_call_id(self) -> str:
        """A fresh provider-style tool call id: ``call_`` + 24 base-62 characters."""
        return self._ids.call_id()

    def _snapshot(self) -> str:
        # OpenCode records the git tree hash of the worktree; any stable 40-hex string will do.
        seed = f"{self.session_id}:{self._steps_started}".encode()
        return hashlib.sha1(seed, usedforsecurity=False).hexdigest()

    def _current_message_id(self) -> str:
        # A part added outside an open step gets a message of its own, as if that step's
        # step_start line had been lost. Tests use this for unmatched steps.
        if self._message_id is None:
            self._message_id = self._ids.ascending("msg", self.clock_ms)
        return self._message_id

    def _spend_model_time(self) -> None:
        # The first thing a step produces pays for the whole model call; later parts of the
        # same step arrive almost immediately.
        if self._model_time_pending:
            self.clock_ms += self.model_ms_per_step
            self._model_time_pending = False
        else:
            self.clock_ms += 1

    def _append_part(self, event_type: str, part: dict) -> dict:
        event = {
            "type": event_type,
            "timestamp": self.clock_ms,
            "sessionID": self.session_id,
            "part": part,
        }
        self.events.append(event)
        return event

    def _part_header(self, part_type: str) -> dict:
        message_id = self._current_message_id()  # first: a message is older than its parts
        return {
            "id": self._ids.ascending("prt", self.clock_ms),
            "messageID": message_id,
            "sessionID": self.session_id,
            "type": part_type,
        }

    # ------------------------------------------------------------------ the six event types

    def step_start(self, *, snapshot: Any = AUTO) -> dict:
        """Open a new step (a new assistant message with a new ``msg_…`` id)."""
        self.clock_ms += 5
        self._steps_started += 1
        self._message_id = self._ids.ascending("msg", self.clock_ms)
        self._model_time_pending = True
        self._step_generated_chars = 0
        self._step_tool_output_chars = 0
        part = self._part_header("step-start")
        if snapshot is AUTO:
            part["snapshot"] = self._snapshot()
        elif snapshot is not ABSENT:
            part["snapshot"] = snapshot
        return self._append_part("step_start", part)

    def text(self, text: str) -> dict:
        """A finished text part (OpenCode sends the full text once, never deltas)."""
        return self._text_like("text", text)

    def reasoning(self, text: str) -> dict:
        """A reasoning part (only seen with ``--thinking``); same shape as text."""
        return self._text_like("reasoning", text)

    def _text_like(self, kind: str, text: str) -> dict:
        started = self.clock_ms + 1
        self._spend_model_time()
        self._step_generated_chars += len(text)
        part = self._part_header(kind)
        part["text"] = text
        part["time"] = {"start": started, "end": self.clock_ms}
        return self._append_part(kind, part)

    def tool(
        self,
        tool: str,
        input: dict,  # noqa: A002 - mirrors OpenCode's field name
        output: str = "",
        *,
        status: str = "completed",
        error: str | None = None,
        title: str | None = None,
        metadata: dict | None = None,
        call_id: Any = AUTO,
        duration_ms: int = 40,
        state: Any = AUTO,
    ) -> dict:
        """A settled tool call (``tool_use``).

        ``status``: ``"completed"`` gives ``state{status,input,output,title,metadata,time}``;
        ``"error"`` gives ``state{status,input,error,time}``. ``"running"`` and ``"pending"``
        (which ``run --format json`` never emits, but ``opencode export`` keeps for a call cut
        short by a kill) give the shapes the export has. ``title`` and ``metadata`` default to
        what the named OpenCode tool would report.

        ``call_id``: ``AUTO`` makes a fresh ``call_…`` id; any other value is written as given:
        ``None`` writes ``null``, ``""`` an empty string, ``ABSENT`` leaves the key out.

        ``state``: ``AUTO`` builds it from the arguments above; ``ABSENT`` leaves the key out;
        anything else (``None`` included) is written as given.
        """
        self._spend_model_time()
        self._step_generated_chars += len(orjson.dumps(input))
        self._step_tool_output_chars += len(output)
        started = self.clock_ms + 1
        self.clock_ms = started + duration_ms

        part = self._part_header("tool")
        part["tool"] = tool
        if call_id is AUTO:
            part["callID"] = self.new_call_id()
        elif call_id is not ABSENT:
            part["callID"] = call_id
        if state is AUTO:
            part["state"] = tool_state(
                tool, input, output, status, error, title, metadata, started, self.clock_ms
            )
        elif state is not ABSENT:
            part["state"] = state
        return self._append_part("tool_use", part)

    def bash(
        self,
        command: str,
        output: str = "",
        *,
        exit_code: int = 0,
        description: str | None = None,
        **tool_kwargs: Any,
    ) -> dict:
        """A completed bash call. A non-zero exit is still ``completed``, with ``metadata.exit``."""
        if description is None:
            description = describe_command(command)
        metadata = {
            "output": bash_metadata_output(output),
            "exit": exit_code,
            "description": description,
            "truncated": False,
        }
        tool_kwargs.setdefault("metadata", metadata)
        tool_kwargs.setdefault("title", description)
        return self.tool(
            "bash", {"command": command, "description": description}, output, **tool_kwargs
        )

    def invalid(self, attempted_tool: str, problem: str, **tool_kwargs: Any) -> dict:
        """The call OpenCode records when the model names an unknown tool or sends bad JSON."""
        return self.tool(
            "invalid",
            {"tool": attempted_tool, "error": problem},
            f"The arguments provided to the tool are invalid: {problem}",
            **tool_kwargs,
        )

    def step_finish(
        self,
        reason: str = "tool-calls",
        *,
        input_tokens: Any = AUTO,
        output_tokens: Any = AUTO,
        reasoning_tokens: int = 0,
        cache_read: int = 0,
        cache_write: int = 0,
        cost: float = 0.0,
        total_tokens: Any = AUTO,
        snapshot: Any = AUTO,
    ) -> dict:
        """Close the open step.

        Token counts default to a rough estimate from the characters seen so far (the context
        grows with every step), so long traces look plausible. ``total_tokens=ABSENT`` leaves
        ``tokens.total`` out, as OpenCode does when the provider sent no usage.
        """
        self._spend_model_time()
        if input_tokens is AUTO:
            input_tokens = _SYSTEM_PROMPT_TOKENS + self._context_chars // _CHARS_PER_TOKEN
        if output_tokens is AUTO:
            output_tokens = 1 + self._step_generated_chars // _CHARS_PER_TOKEN
        tokens: dict[str, Any] = {}
        if total_tokens is AUTO:
            tokens["total"] = (
                input_tokens + output_tokens + reasoning_tokens + cache_read + cache_write
            )
        elif total_tokens is not ABSENT:
            tokens["total"] = total_tokens
        tokens["input"] = input_tokens
        tokens["output"] = output_tokens
        tokens["reasoning"] = reasoning_tokens
        tokens["cache"] = {"read": cache_read, "write": cache_write}

        part = self._part_header("step-finish")
        part["reason"] = reason
        if snapshot is AUTO:
            part["snapshot"] = self._snapshot()
        elif snapshot is not ABSENT:
            part["snapshot"] = snapshot
        part["cost"] = js_number(cost)
        part["tokens"] = tokens
        event = self._append_part("step_finish", part)

        self._context_chars += self._step_generated_chars + self._step_tool_output_chars
        self._step_generated_chars = 0
        self._step_tool_output_chars = 0
        self._message_id = None
        return event

    def error(self, name: str, message: str, **data: Any) -> dict:
        """A provider/API error (``opencode run`` then exits 1). Extra ``data`` fields allowed."""
        self.clock_ms += 1
        event = {
            "type": "error",
            "timestamp": self.clock_ms,
            "sessionID": self.session_id,
            "error": {"name": name, "data": {"message": message, **data}},
        }
        self.events.append(event)
        return event

    # ------------------------------------------------------------------ anything else

    def event(self, event_type: str, **fields: Any) -> dict:
        """An event of any type with the usual envelope, e.g. a newer OpenCode's ``done``."""
        self.clock_ms += 1
        event = {"type": event_type, "timestamp": self.clock_ms, "sessionID": self.session_id}
        event.update(fields)
        self.events.append(event)
        return event

    def raw(self, event: dict) -> dict:
        """Append ``event`` exactly as given (no envelope, clock untouched)."""
        self.events.append(event)
        return event

    # ------------------------------------------------------------------ output

    def dumps(self) -> bytes:
        """All events as JSON Lines, byte for byte as OpenCode writes them to stdout."""
        return b"".join([dumps_event(event) for event in self.events])

    def drain(self) -> bytes:
        """``dumps()`` then forget the events; ids, clock and accounting carry on.

        Lets a benchmark write a very large trace in chunks without holding every event.
        """
        data = self.dumps()
        self.events.clear()
        return data
