"""``smoldata-tui diff A B`` where there is no screen to draw (a pipe, a file, a CI log): what the
screen's header and rows say, as plain text, one pair a line."""

from __future__ import annotations

from smoldata_tui.diff.compare import MARKS, SAME, EpisodeDiff
from smoldata_tui.diff.report import side_facts
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.text import clip

SUMMARY_WIDTH = 60  # of each side's call summary: the two sides and the columns fit 150 characters


def diff_text(diff: EpisodeDiff) -> list[str]:
    """The lines: each side's facts, where they first part ways, then every pair."""
    lines = []
    for label, episode in (("A", diff.a), ("B", diff.b)):
        facts = side_facts(episode)
        said = [facts.path, facts.task or "(no task)", facts.status, facts.verdict_text, facts.grade_text or "no grade",
                f"{facts.calls:,} call{'s' if facts.calls != 1 else ''}", f"{facts.tokens:,} tokens",
                format_duration(facts.duration_ms)]  # fmt: skip
        lines.append(f"{label}  " + " · ".join(clip(part, 200) for part in said if part))
    first = diff.first_divergence
    if first is None:
        lines.append(f"the same {len(diff.pairs):,} calls in the same order")
    else:
        call_a, call_b = diff.call_a(diff.pairs[first]), diff.call_b(diff.pairs[first])
        where = ", ".join(f"{label} line {call.line}" for label, call in (("A", call_a), ("B", call_b)) if call)
        changed = sum(pair.op != SAME for pair in diff.pairs)
        lines.append(f"first divergence: pair {first + 1} ({where}); {changed:,} of {len(diff.pairs):,} pairs differ")
    lines.append("")
    lines.append(f"   {'pair':>5}  {'tool':<10} {'A line':>7} {'B line':>7}  {'A':<{SUMMARY_WIDTH}}  B")
    for number, pair in enumerate(diff.pairs, start=1):
        call_a, call_b = diff.call_a(pair), diff.call_b(pair)
        outputs = "*" if pair.output_differs else " "
        tool = clip((call_a or call_b).tool, 10)
        a_line, b_line = (str(call.line) if call else "" for call in (call_a, call_b))
        summary_a = clip(call_a.summary, SUMMARY_WIDTH) if call_a else "\u2014"
        summary_b = clip(call_b.summary, SUMMARY_WIDTH) if call_b else "\u2014"
        lines.append(f"{MARKS[pair.op]}{outputs} {number:>5}  {tool:<10} {a_line:>7} {b_line:>7}  "
                     f"{summary_a:<{SUMMARY_WIDTH}}  {summary_b}".rstrip())  # fmt: skip
    lines.append("")
    lines.append("= same  ~ changed  - only in A  + only in B  * outputs differ")
    return lines
