"""The detail of one aligned pair: unified diffs of its input and of its output, as plain lines.

Both sides are read back from their traces and shown as the comparison saw them: normalised
(ids, temporary paths, sandbox names, and in outputs times, replaced: see ``normalize``). The
text is raw and untrusted; the screen neutralises it. Very long texts are cut to
``LINE_LIMIT`` lines per side before diffing (difflib's cost grows faster than the size).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from smoldata_tui.diff.calls import Call, CallReader, call_input
from smoldata_tui.diff.compare import EpisodeDiff, Pair
from smoldata_tui.diff.normalize import OUTPUT_RULES, SANDBOX_RULES, normalize_text
from smoldata_tui.trace.event_detail import pretty_json

LINE_LIMIT = 4000
UNREADABLE = "(the call could not be read back from its trace)"


@dataclass(frozen=True, slots=True)
class PairDetail:
    title: str  # "changed · bash · A line 12 / B line 14"
    input_diff: list[str]  # unified diff lines (---, +++, @@, +, -, space); [] when equal
    output_diff: list[str]
    input_same: bool
    output_same: bool
    note: str = ""


def input_text(part: dict | None) -> str:
    """A call's input as lines a person reads: string arguments as they are, others as JSON."""
    if part is None:
        return UNREADABLE
    value = call_input(part.get("state"))
    if not isinstance(value, dict):
        return normalize_text(pretty_json(value), SANDBOX_RULES)
    lines = []
    for key in sorted(value):
        item = value[key]
        if isinstance(item, str) and ("\n" in item or len(item) > 60):
            lines.append(f"{key}:")
            lines.extend(f"    {line}" for line in item.split("\n"))
        else:
            lines.append(f"{key}: {item if isinstance(item, str) else pretty_json(item)}")
    return normalize_text("\n".join(lines), SANDBOX_RULES)


def output_text(part: dict | None) -> str:
    if part is None:
        return UNREADABLE
    state = part.get("state")
    if not isinstance(state, dict):
        return f"(no usable state: {pretty_json(state)})"
    lines = [f"status: {state.get('status')}"]
    metadata = state.get("metadata")
    if isinstance(metadata, dict) and "exit" in metadata:
        lines.append(f"exit: {metadata.get('exit')}")
    if "error" in state:
        lines.append(f"error: {state.get('error')}")
    output = state.get("output")
    if output is not None:
        lines.append("output:")
        lines.append(output if isinstance(output, str) else pretty_json(output))
    return normalize_text("\n".join(lines), OUTPUT_RULES)


def diff_line_kind(line: str) -> str:
    """What a line of a unified diff is: header (---/+++), hunk (@@), added, removed or plain."""
    if line.startswith(("+++", "---")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "plain"


def _unified(text_a: str | None, text_b: str | None, label_a: str, label_b: str) -> tuple[list[str], bool]:
    lines_a = text_a.split("\n") if text_a is not None else []
    lines_b = text_b.split("\n") if text_b is not None else []
    if lines_a == lines_b:
        return [], True
    cut = len(lines_a) > LINE_LIMIT or len(lines_b) > LINE_LIMIT
    lines_a, lines_b = lines_a[:LINE_LIMIT], lines_b[:LINE_LIMIT]
    diff = list(difflib.unified_diff(lines_a, lines_b, label_a, label_b, lineterm="", n=3))
    if cut:
        diff.append(f"(only the first {LINE_LIMIT:,} lines of each side were compared)")
    return diff, False


def pair_detail(diff: EpisodeDiff, pair: Pair, readers: tuple[CallReader, CallReader]) -> PairDetail:
    call_a: Call | None = diff.call_a(pair)
    call_b: Call | None = diff.call_b(pair)
    part_a = readers[0].part(call_a) if call_a else None
    part_b = readers[1].part(call_b) if call_b else None
    label_a = f"A line {call_a.line}" if call_a else "A (no such call)"
    label_b = f"B line {call_b.line}" if call_b else "B (no such call)"
    tool = (call_a or call_b).tool
    inputs, inputs_same = _unified(input_text(part_a) if call_a else None, input_text(part_b) if call_b else None,
                                   label_a, label_b)  # fmt: skip
    outputs, outputs_same = _unified(output_text(part_a) if call_a else None,
                                     output_text(part_b) if call_b else None, label_a, label_b)  # fmt: skip
    note = ""
    if call_a is None or call_b is None:
        note = f"only in {'A' if call_b is None else 'B'}: the other episode has no call here"
    return PairDetail(f"{pair.op} \u00b7 {tool} \u00b7 {label_a} / {label_b}", inputs, outputs, inputs_same,
                      outputs_same, note)  # fmt: skip
