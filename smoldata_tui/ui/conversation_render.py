"""One event of the conversation view as Rich renderables: what a reader of the run wants to see.

The model's text as markdown, its reasoning dimmed, and each tool call as what it is: ``edit`` a
coloured diff, ``write`` the file highlighted by its extension, ``todowrite`` a checklist, ``bash``
the command, its output and exit code. Long bodies are folded to their first lines with a count.

Every string from the trace goes through :func:`safe_text` (escape sequences made visible) and
into ``Text`` (never parsed as markup) or ``Markdown`` (markdown only; links are not made
clickable). Styles are the ``conv.*`` / ``markdown.*`` names of :mod:`smoldata_tui.ui.theme_text`,
so the colours are the theme's. No Textual here: the widget turns these into strips.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from rich.console import RenderableType
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from smoldata_tui.diff.detail import diff_line_kind
from smoldata_tui.trace.call_checks import bash_timeout_ms
from smoldata_tui.trace.event_detail import pretty_json
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.summary import Parsed, error_text, input_digest
from smoldata_tui.ui.safe_text import safe_text

FOLDED_LINES = 12  # a body longer than this shows its first lines and a count until expanded
EXPANDED_LINES = 2000  # even expanded, past this the detail pane (Enter on the timeline) has the rest
TEXT_FOLDED_LINES = 40  # the model's own words are what one reads: fold them later


@dataclass(frozen=True)
class Look:
    """What the drawing depends on besides the event: the theme's darkness and the fold state."""

    dark: bool = True
    expanded: bool = False
    background: str | None = None  # the view's background, behind highlighted code

    @property
    def code_theme(self) -> str:
        return "monokai" if self.dark else "friendly"


class _Code(Syntax):
    """Highlighted code whose line numbers read at 4.5:1: Rich blends them 30% of the way from the
    background to the text colour (2.1:1 to 2.6:1); 60% keeps them muted and readable."""

    def _get_line_numbers_color(self, blend: float = 0.3):
        return super()._get_line_numbers_color(max(blend, 0.6))


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def fold(text: str, look: Look, limit: int = FOLDED_LINES) -> tuple[str, int]:
    """The lines of ``text`` to draw, and how many are left out."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    keep = EXPANDED_LINES if look.expanded else limit
    if len(lines) <= keep:
        return "\n".join(lines), 0
    shown = keep if look.expanded else max(1, limit - 2)
    return "\n".join(lines[:shown]), len(lines) - shown


def fold_note(hidden: int, look: Look) -> Text:
    if look.expanded:
        return Text(f"\u2026 {hidden:,} more lines: Enter on the timeline row opens the whole event", "conv.fold")
    return Text(f"\u25b8 {hidden:,} more lines (Enter or click: show them)", "conv.fold")


def body(text: str, style: str, look: Look, limit: int = FOLDED_LINES) -> list[RenderableType]:
    shown, hidden = fold(safe_text(text), look, limit)
    parts: list[RenderableType] = [Text(shown, style, overflow="fold")] if shown else []
    if hidden:
        parts.append(fold_note(hidden, look))
    return parts


def heading(label: str, detail: str = "", status: Text | None = None) -> Text:
    text = Text(overflow="fold")
    text.append(label, "conv.tool")
    if detail:
        text.append("  ")
        text.append(safe_text(detail).replace("\n", " "), "conv.code")
    if status is not None and status.plain:
        text.append("  ")
        text.append_text(status)
    return text


def _status(state: dict, part: dict) -> Text:
    status = state.get("status")
    text = Text()
    times = state.get("time") if isinstance(state.get("time"), dict) else {}
    start, end = times.get("start"), times.get("end")
    took = ""
    if isinstance(start, (int, float)) and isinstance(end, (int, float)) and end >= start:
        took = f"  {format_duration(end - start)}"
    if status == "error":
        text.append("\u2717 error", "conv.error")
    elif status == "completed":
        if bash_timeout_ms(part) is not None:
            text.append("\u2717 timed out", "conv.error")
        else:
            text.append("\u2713", "conv.success")
    else:
        text.append(f"\u2026 {safe_text(str(status))}" if status else "\u2026 unfinished", "conv.warning")
    text.append(took, "conv.muted")
    return text


def _lexer(path: str, code: str) -> str:
    try:
        return Syntax.guess_lexer(path, code[:4096])
    except Exception:  # noqa: BLE001 - pygments cannot tell: plain text
        return "text"


def diff_lines(part_input: dict, metadata: dict) -> list[str]:
    """The edit's diff: OpenCode's own (``metadata.diff``), else one made from old/new strings."""
    recorded = metadata.get("diff")
    if isinstance(recorded, str) and recorded.strip():
        lines = recorded.split("\n")
        # OpenCode's diff starts with an "Index:"/"====" preamble: the hunks are what one reads.
        start = next((i for i, line in enumerate(lines) if line.startswith("@@")), 0)
        return lines[start:]
    old, new = _string(part_input.get("oldString")), _string(part_input.get("newString"))
    return list(difflib.unified_diff(old.split("\n"), new.split("\n"), lineterm="", n=2))[2:]


_DIFF_STYLE = {"header": "conv.muted", "hunk": "conv.hunk", "added": "conv.add", "removed": "conv.remove", "plain": ""}


def diff_text(lines: list[str], look: Look) -> list[RenderableType]:
    keep = EXPANDED_LINES if look.expanded else FOLDED_LINES * 2
    text = Text(overflow="fold")
    for line in lines[:keep]:
        text.append(safe_text(line) + "\n", _DIFF_STYLE[diff_line_kind(line)])
    text.rstrip()
    parts: list[RenderableType] = [text]
    if len(lines) > keep:
        parts.append(fold_note(len(lines) - keep, look))
    return parts


TODO_MARK = {"completed": ("[x]", "conv.success"), "in_progress": ("[~]", "conv.warning"),
             "cancelled": ("[-]", "conv.muted"), "pending": ("[ ]", "")}  # fmt: skip


def checklist(todos: list) -> Text:
    text = Text(overflow="fold")
    for todo in todos:
        if not isinstance(todo, dict):
            text.append(safe_text(str(todo)) + "\n")
            continue
        status = _string(todo.get("status"))
        mark, style = TODO_MARK.get(status, (f"[{safe_text(status)[:12]}]", "conv.muted"))
        text.append(f"{mark} ", style or "bold")
        words = safe_text(_string(todo.get("content")) or str(todo.get("content"))).replace("\n", " ")
        text.append(words, "conv.muted strike" if status == "cancelled" else style)
        priority = _string(todo.get("priority"))
        if priority:
            text.append(f"  ({safe_text(priority)})", "conv.muted")
        text.append("\n")
    text.rstrip()
    return text


def tool_parts(part: dict, look: Look) -> list[RenderableType]:
    tool = safe_text(_string(part.get("tool")) or "?")
    state = part.get("state")
    if not isinstance(state, dict):
        return [heading(tool, status=Text("(no state)", "conv.error"))]
    tool_input = state.get("input") if isinstance(state.get("input"), dict) else {}
    metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
    output = state.get("output")
    output = output if isinstance(output, str) else ("" if output is None else pretty_json(output))
    status = _status(state, part)
    parts: list[RenderableType] = []
    if tool == "bash":
        command = _string(tool_input.get("command"))
        description = _string(tool_input.get("description"))
        exit_code = metadata.get("exit")
        if isinstance(exit_code, int) and not isinstance(exit_code, bool):
            status.append(f"  exit {exit_code}", "conv.success" if exit_code == 0 else "conv.error")
        parts.append(heading("bash", description, status))
        parts.append(Text("$ " + safe_text(command), "conv.code", overflow="fold"))
        parts += body(output or _string(metadata.get("output")), "", look)
    elif tool == "edit":
        path = _string(tool_input.get("filePath"))
        parts.append(heading("edit", path, status))
        parts += diff_text(diff_lines(tool_input, metadata), look)
    elif tool == "write":
        path = _string(tool_input.get("filePath"))
        parts.append(heading("write", path, status))
        shown, hidden = fold(safe_text(_string(tool_input.get("content"))), look, FOLDED_LINES * 2)
        syntax = _Code(shown, _lexer(path, shown), theme=look.code_theme, line_numbers=True, word_wrap=True,
                        background_color=look.background)  # fmt: skip
        parts.append(syntax)
        if hidden:
            parts.append(fold_note(hidden, look))
    elif tool == "todowrite":
        todos = tool_input.get("todos")
        todos = todos if isinstance(todos, list) else metadata.get("todos") if isinstance(metadata.get("todos"), list) else []
        done = sum(1 for todo in todos if isinstance(todo, dict) and todo.get("status") == "completed")
        parts.append(heading("todowrite", f"{done}/{len(todos)} done", status))
        parts.append(checklist(todos))
    else:
        parts.append(heading(tool, input_digest(tool, tool_input), status))
        rest = {key: value for key, value in tool_input.items() if key not in ("filePath", "path", "pattern", "command")}
        if rest:
            parts += body(pretty_json(rest), "conv.muted", look, 6)
        parts += body(output, "", look)
    if state.get("status") == "error":
        parts += body(_string(state.get("error")) or str(state.get("error")), "conv.error", look)
    return parts


def event_parts(kind: str, parsed: Parsed, look: Look, step: int = 0) -> list[RenderableType]:
    """The renderables of one event (an empty list: nothing to read in it)."""
    if kind == "step_start":
        return [Text(f"\u2500\u2500 step {step} \u2500\u2500", "conv.step")]
    value = parsed.value if isinstance(parsed.value, dict) else {}
    part = value.get("part") if isinstance(value.get("part"), dict) else {}
    if parsed.error is not None:
        return [Text("(a line that is not JSON: see the timeline)", "conv.error")]
    if kind == "text":
        text, hidden = fold(safe_text(_string(part.get("text"))), look, TEXT_FOLDED_LINES)
        parts: list[RenderableType] = [Markdown(text, code_theme=look.code_theme, hyperlinks=False)]
        return parts + ([fold_note(hidden, look)] if hidden else [])
    if kind == "reasoning":
        return [Text("thinking", "conv.muted"), *body(_string(part.get("text")), "conv.reasoning", look, TEXT_FOLDED_LINES)]
    if kind == "tool_use":
        return tool_parts(part, look)
    if kind == "error":
        return [Text("\u2717 " + safe_text(error_text(value.get("error"))), "conv.error", overflow="fold")]
    if kind == "step_finish":
        reason = _string(part.get("reason"))
        if reason in ("", "tool-calls", "stop"):
            return []
        return [Text(f"step ended: {safe_text(reason)}", "conv.warning")]
    return []


def prompt_parts(prompt: str, source: str, look: Look) -> list[RenderableType]:
    shown, hidden = fold(safe_text(prompt), look, TEXT_FOLDED_LINES)
    parts: list[RenderableType] = [Text("Task prompt", "conv.heading"), Text(safe_text(source), "conv.muted", overflow="fold"),
                                   Markdown(shown, code_theme=look.code_theme, hyperlinks=False)]  # fmt: skip
    return parts + ([fold_note(hidden, look)] if hidden else [])




def recovered_parts(calls: list[dict], status: str | None) -> list[RenderableType]:
    """The calls still running when the agent was stopped (from ``opencode export``; the stream
    never shows them), each as its tool and what it was doing, marked unfinished."""
    parts: list[RenderableType] = [Text(f"Unfinished when the agent was {safe_text(status or 'stopped')}", "conv.heading"),
                                   Text("recovered from opencode export: the stream never shows these calls", "conv.muted")]  # fmt: skip
    for call in calls:
        tool_input = call.get("input") if isinstance(call.get("input"), dict) else {}
        what = tool_input.get("command") or tool_input.get("filePath") or ""
        line = Text(f"\u2717 {safe_text(str(call.get('tool')))}", "conv.warning")
        if what:
            line.append(f"  {safe_text(str(what))}", "conv.code")
        line.append(f"   status {safe_text(str(call.get('status')))}, never finished", "conv.muted")
        parts.append(line)
        partial = call.get("partial_output")
        if isinstance(partial, str) and partial:
            parts.append(Text(safe_text(partial[-2000:]), "conv.muted", overflow="fold"))
    return parts
