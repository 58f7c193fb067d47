"""What the diff screen says: its header and the detail pane's blocks."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from smoldata_tui.diff import CHANGED, ONLY_A, ONLY_B, SAME, EpisodeDiff, SideFacts
from smoldata_tui.diff.detail import PairDetail, diff_line_kind
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.safe_text import safe_text

Block = tuple[str, list[str]]


PLUS, MINUS, PLUS_MINUS, NONE = "+", "\u2212", "\u00b10", "\u2014"


def _signed(value: float) -> str:
    if value == 0:
        return PLUS_MINUS
    return f"{PLUS if value > 0 else MINUS}{abs(value):,.0f}"


def _signed_duration(ms: float | None, other: float | None) -> str:
    if ms is None or other is None:
        return "?"
    delta = other - ms
    shown = format_duration(abs(delta)) or "0ms"
    return PLUS_MINUS if delta == 0 else f"{PLUS if delta > 0 else MINUS}{shown}"


def shown_name(path: str) -> str:
    """``a/run.jsonl`` for an episode folder's trace (every one is run.jsonl), else the file name."""
    trace = Path(path)
    return f"{trace.parent.name}/{trace.name}" if trace.name == "run.jsonl" and trace.parent.name else trace.name


def _side_line(label: str, facts: SideFacts, *, show_task: bool) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{label} ", "bold reverse")
    text.append(f" {clip(shown_name(facts.path), 40)}", "bold")
    if facts.task and show_task:
        text.append(f" \u00b7 {clip(facts.task, 30)}")
    text.append(f" \u00b7 {clip(facts.status, 12)}")
    verdict_style = "$success" if facts.verdict is not None else "bold $error"
    text.append(f" \u00b7 verdict {facts.verdict if facts.verdict is not None else 'None'}", verdict_style)
    text.append(f" \u00b7 {clip(facts.grade_text, 20) if facts.grade_text else 'no grade'}", "$accent")
    text.append(f" \u00b7 {facts.calls:,} calls \u00b7 {facts.tokens:,} tok \u00b7 {format_duration(facts.duration_ms) or '?'}")
    return text


def header_lines(diff: EpisodeDiff, a: SideFacts, b: SideFacts) -> Text:
    """Three lines: A, B, and what changed from A to B."""
    show_task = a.task != b.task  # the same task on both sides is no news
    text = _side_line("A", a, show_task=show_task)
    text.append("\n")
    text.append_text(_side_line("B", b, show_task=show_task))
    text.append("\n")
    counts = diff.counts()
    delta = Text(no_wrap=True, overflow="ellipsis")
    delta.append("\u0394 ", "bold reverse")
    delta.append(f" B\u2212A: calls {_signed(b.calls - a.calls)} \u00b7 tokens {_signed(b.tokens - a.tokens)}"
                 f" \u00b7 time {_signed_duration(a.duration_ms, b.duration_ms)}")  # fmt: skip
    if a.grade is not None and b.grade is not None and a.grade != b.grade:
        delta.append(f" \u00b7 grade {a.grade:g}\u2192{b.grade:g}", "bold $accent")
    delta.append(f"   = {counts[SAME]:,}  ~ {counts[CHANGED]:,}  - {counts[ONLY_A]:,}  + {counts[ONLY_B]:,}")
    first = diff.first_divergence
    if first is None:
        delta.append("   same calls", "bold $success")
    else:
        pair = diff.pairs[first]
        call_a, call_b = diff.call_a(pair), diff.call_b(pair)
        where = f"A L{call_a.line if call_a else NONE} / B L{call_b.line if call_b else NONE}"
        delta.append(f"   first divergence {where}", "bold $warning")
    skipped = len(diff.a.skipped) + len(diff.b.skipped)
    if skipped:
        delta.append(f"   {skipped} unparsed line(s) not compared", "bold $error")
    if not diff.exact:
        delta.append("   approximate alignment", "bold $error")
    text.append_text(delta)
    return text


_DIFF_STYLE = {"header": "muted", "hunk": "info", "added": "added", "removed": "removed", "plain": "plain"}


def _diff_block(lines: list[str]) -> list[Block]:
    blocks: list[Block] = []
    for line in lines:
        style = _DIFF_STYLE[diff_line_kind(line)]
        text = safe_text(line)
        if blocks and blocks[-1][0] == style:
            blocks[-1][1].extend(text.split("\n"))
        else:
            blocks.append((style, text.split("\n")))
    return blocks


def detail_blocks(detail: PairDetail) -> list[Block]:
    blocks: list[Block] = [("title", [safe_text(detail.title)])]
    if detail.note:
        blocks.append(("warning", [detail.note]))
    blocks.append(("muted", ["ids, temporary paths, sandbox names and (in outputs) times are normalised"]))
    for title, lines, same in (("Input", detail.input_diff, detail.input_same),
                               ("Output", detail.output_diff, detail.output_same)):  # fmt: skip
        blocks.append(("heading", [f"\u2500\u2500 {title} "]))
        if same:
            blocks.append(("muted", ["(identical)"]))
        else:
            blocks.extend(_diff_block(lines))
    return blocks
