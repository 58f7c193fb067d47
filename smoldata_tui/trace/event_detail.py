"""One event → the detail pane's sections: everything worth reading about it, untruncated.

Pure functions over decoded JSON values (no I/O, no Textual). Section bodies are the full,
untruncated strings of the event: the caller neutralises them line by line when it lays them
out, because it also splits them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from smoldata_tui.trace.analysis import MALFORMED
from smoldata_tui.trace.number_format import format_count
from smoldata_tui.trace.summary import Parsed, error_text, json_number, nonempty_string


@dataclass(frozen=True, slots=True)
class DetailSection:
    """One titled block of the detail pane. ``body`` is raw, untrusted text."""

    title: str
    body: str
    style: str = "plain"  # plain / code / output / error / json / muted


def pretty_json(value: object) -> str:
    """Indented JSON with non-ASCII kept (the caller neutralises control characters)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        return repr(value)


def _tool_sections(part: dict) -> list[DetailSection]:
    sections = [DetailSection("Tool", f"{part.get('tool')}   callID {part.get('callID', '(absent)')}", "muted")]
    state = part.get("state")
    if not isinstance(state, dict):
        sections.append(DetailSection("State", pretty_json(state) if "state" in part else "(no state key)", "error"))
        return sections
    tool_input = state.get("input")
    if part.get("tool") == "bash" and isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str):
        if nonempty_string(tool_input.get("description")):
            sections.append(DetailSection("Description", tool_input["description"], "muted"))
        sections.append(DetailSection("Command", tool_input["command"], "code"))
        rest = {key: val for key, val in tool_input.items() if key not in ("command", "description")}
        if rest:
            sections.append(DetailSection("Other input", pretty_json(rest), "json"))
    elif "input" in state:
        sections.append(DetailSection("Input", pretty_json(tool_input), "json"))
    if "error" in state:
        sections.append(DetailSection("Error", str(state.get("error")), "error"))
    if "output" in state:
        output = state.get("output")
        sections.append(DetailSection("Output", output if isinstance(output, str) else pretty_json(output), "output"))
    metadata = state.get("metadata")
    if isinstance(metadata, dict) and metadata:
        # metadata.output repeats the output (bash): show the short facts only.
        facts = {key: val for key, val in metadata.items() if key != "output"}
        if facts:
            sections.append(DetailSection("Metadata", pretty_json(facts), "json"))
        if "output" not in state and isinstance(metadata.get("output"), str):
            sections.append(DetailSection("Partial output (metadata)", metadata["output"], "output"))
    return sections


def _step_finish_sections(part: dict) -> list[DetailSection]:
    lines = [f"{'reason':<10}{part.get('reason')}"]
    tokens = part.get("tokens")
    if isinstance(tokens, dict):
        for key in ("total", "input", "output", "reasoning"):
            if key in tokens:
                lines.append(f"{key:<10}{_fmt_any(tokens.get(key))}")
        cache = tokens.get("cache")
        if isinstance(cache, dict):
            lines.append(f"{'cache':<10}read {_fmt_any(cache.get('read'))}  write {_fmt_any(cache.get('write'))}")
    if "cost" in part:
        cost = json_number(part.get("cost"))
        lines.append(f"{'cost':<10}" + (f"${cost:.6f}" if cost is not None else repr(part.get("cost"))))
    return [DetailSection("Step finished", "\n".join(lines), "plain")]


def _fmt_any(value: object) -> str:
    number = json_number(value)
    return format_count(number) if number is not None else repr(value)


def detail_sections(parsed: Parsed, kind: str) -> list[DetailSection]:
    """Everything worth reading about one event, untruncated."""
    if parsed.error is not None or kind == MALFORMED:
        return [
            DetailSection("Not JSON", parsed.error or "this line is not valid JSON", "error"),
            DetailSection("Line", parsed.text, "output"),
        ]
    value = parsed.value
    if not isinstance(value, dict):
        return [DetailSection("Not an event object", pretty_json(value), "error")]
    part = value.get("part")
    if kind == "tool_use" and isinstance(part, dict):
        return _tool_sections(part)
    if kind in ("text", "reasoning") and isinstance(part, dict) and isinstance(part.get("text"), str):
        return [DetailSection(kind.capitalize(), part["text"], "plain")]
    if kind == "step_finish" and isinstance(part, dict):
        return _step_finish_sections(part)
    if kind == "error":
        error = value.get("error")
        return [
            DetailSection("Error", error_text(error), "error"),
            DetailSection("Payload", pretty_json(error), "json"),
        ]
    return [DetailSection("Event", pretty_json(value), "json")]
