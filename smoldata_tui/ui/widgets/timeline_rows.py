"""The text of one timeline row and of the column header above the rows.

Columns, left to right: severity mark, line, time since the first event, step, event type,
tool, title (takes what is left), finding badges, call status, duration. Everything shown comes
from :mod:`smoldata_tui.trace.summary` and :mod:`smoldata_tui.trace.finding_labels`, whose
strings are already neutralised single lines, and goes into ``rich.text.Text`` objects: no
markup is ever parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from smoldata_tui.trace import EventRecord, Finding, Severity
from smoldata_tui.trace.analysis import MALFORMED, NOT_AN_OBJECT
from smoldata_tui.trace.finding_labels import finding_badge
from smoldata_tui.trace.number_format import format_duration, format_offset
from smoldata_tui.trace.summary import TIMED_OUT, UNFINISHED, EventSummary
from smoldata_tui.trace.text import neutralize

TYPE_WIDTH = 11
TOOL_WIDTH = 10
STATUS_WIDTH = 10
DURATION_WIDTH = 7
TIME_WIDTH = 9
MAX_BADGES_WIDTH = 30
MARKS = {Severity.ERROR: "\u2717", Severity.WARNING: "!", Severity.INFO: "\u00b7"}  # ✗ ! ·
_RANK = {Severity.ERROR: 3, Severity.WARNING: 2, Severity.INFO: 1}


@dataclass(frozen=True)
class RowStyles:
    """Rich styles resolved from the timeline's component classes (so themes apply)."""

    base: Style
    dim: Style
    error: Style
    warning: Style
    info: Style
    success: Style
    tool: Style
    error_row: Style
    warning_row: Style
    unfinished: Style
    match: Style
    cursor: Style


COMPACT_BELOW = 120  # rows narrower than this get short type and status names
SHORT_KINDS = {"step_start": "start", "step_finish": "finish", "tool_use": "tool", "reasoning": "think"}
SHORT_STATUS = {"completed": "\u2713", "error": "\u2717 err", UNFINISHED: "OPEN", TIMED_OUT: "timeout"}


@dataclass(frozen=True)
class Columns:
    line: int
    step: int
    compact: bool = False

    @classmethod
    def fit(cls, max_line: int, max_step: int, width: int) -> Columns:
        return cls(line=max(4, len(str(max_line))), step=max(4, len(str(max_step))), compact=width < COMPACT_BELOW)

    @property
    def type(self) -> int:
        return 6 if self.compact else TYPE_WIDTH

    @property
    def tool(self) -> int:
        return 8 if self.compact else TOOL_WIDTH

    @property
    def status(self) -> int:
        return 7 if self.compact else STATUS_WIDTH

    @property
    def fixed(self) -> int:
        """Cells used by every column except the title and the badges."""
        return (
            2
            + self.line
            + 1
            + TIME_WIDTH
            + 1
            + self.step
            + 1
            + self.type
            + 1
            + self.tool
            + 1
            + 1
            + self.status
            + DURATION_WIDTH
        )

    def kind_name(self, kind: str) -> str:
        return SHORT_KINDS.get(kind, kind) if self.compact else kind

    def status_name(self, status: str | None) -> str:
        if status is None:
            return ""
        return SHORT_STATUS.get(status, status) if self.compact else status


def _cell(text: str, width: int, *, right: bool = False) -> str:
    if len(text) > width:
        return text[: width - 1] + "\u2026"
    return text.rjust(width) if right else text.ljust(width)


def header_text(columns: Columns, width: int, styles: RowStyles) -> Text:
    text = Text(no_wrap=True, end="", style=styles.dim)
    text.append("  ")
    text.append(_cell("line", columns.line, right=True) + " ")
    text.append(_cell("time", TIME_WIDTH, right=True) + " ")
    text.append(_cell("step", columns.step, right=True) + " ")
    text.append(_cell("type", columns.type) + " ")
    text.append(_cell("tool", columns.tool) + " ")
    title_width = max(0, width - columns.fixed)
    text.append(_cell("title / summary", title_width) + " ")
    text.append(_cell("status", columns.status))
    text.append(_cell("took", DURATION_WIDTH, right=True))
    text.truncate(width, pad=True)
    return text


def _kind_style(kind: str, styles: RowStyles) -> Style:
    if kind == "tool_use":
        return styles.tool
    if kind in ("error", MALFORMED, NOT_AN_OBJECT):
        return styles.error
    if kind in ("step_start", "step_finish", "reasoning"):
        return styles.dim
    return Style()


def _status_style(status: str | None, styles: RowStyles) -> Style:
    if status == "completed":
        return styles.success
    if status == "error":
        return styles.error
    if status == UNFINISHED:
        return styles.unfinished
    if status == TIMED_OUT:
        return styles.warning
    return Style()


def worst_severity(findings: list[Finding]) -> Severity | None:
    worst = None
    for finding in findings:
        if worst is None or _RANK[finding.severity] > _RANK[worst]:
            worst = finding.severity
    return worst


def badges_text(findings: list[Finding], styles: RowStyles, limit: int) -> Text:
    """``[✗ dup→L12] [· exit 1]``: one chip per finding, most severe first, within ``limit`` cells."""
    text = Text(no_wrap=True, end="")
    ordered = sorted(findings, key=lambda finding: -_RANK[finding.severity])
    for position, finding in enumerate(ordered):
        style = {Severity.ERROR: styles.error, Severity.WARNING: styles.warning}.get(finding.severity, styles.info)
        chip = f"{MARKS[finding.severity]} {finding_badge(finding)}"
        remaining = len(ordered) - position - 1
        more = f" +{remaining}" if remaining else ""
        if text.cell_len + len(chip) + 1 + len(more) > limit:
            if position == 0:
                text.append(chip[: max(0, limit - 1)] + "\u2026", style)
            else:
                text.append(f"+{len(ordered) - position}", styles.dim)
            break
        if position:
            text.append(" ")
        text.append(chip, style)
    return text


def row_text(
    record: EventRecord,
    summary: EventSummary,
    findings: list[Finding],
    columns: Columns,
    width: int,
    styles: RowStyles,
    first_timestamp: float | None,
    highlight: re.Pattern[str] | None = None,
    is_match: bool = False,
) -> Text:
    worst = worst_severity(findings)
    text = Text(no_wrap=True, end="", style=styles.base)
    mark_style = {Severity.ERROR: styles.error, Severity.WARNING: styles.warning}.get(worst, styles.info)
    text.append((MARKS[worst] + " ") if worst else "  ", mark_style)
    line = str(record.line) if not record.piece else f"{record.line}.{record.piece}"
    text.append(_cell(line, columns.line, right=True), styles.match if is_match else styles.dim)
    text.append(" ")
    offset = None
    if record.timestamp is not None and first_timestamp is not None:
        offset = record.timestamp - first_timestamp
    text.append(_cell(format_offset(offset), TIME_WIDTH, right=True) + " ", styles.dim)
    text.append(_cell(str(record.step) if record.step else "", columns.step, right=True) + " ", styles.dim)
    # The event type and the tool name come from the trace: neutralised like any agent text.
    text.append(
        _cell(neutralize(columns.kind_name(record.kind), keep_newlines=False), columns.type) + " ",
        _kind_style(record.kind, styles),
    )
    text.append(_cell(neutralize(record.tool or "", keep_newlines=False), columns.tool) + " ", styles.tool)

    badges = badges_text(findings, styles, min(MAX_BADGES_WIDTH, max(8, width // 4))) if findings else Text()
    title_width = max(0, width - columns.fixed - (badges.cell_len + 1 if badges else 0))
    if record.kind == "step_start" and not summary.title:
        title = Text(f"\u2500\u2500 step {record.step} \u2500\u2500", style=styles.dim, no_wrap=True, end="")
    else:
        title = Text(summary.title, style=styles.error if summary.is_error else Style(), no_wrap=True, end="")
    if summary.detail:
        title.append("  " + summary.detail, styles.dim)
    if highlight is not None:
        title.highlight_regex(highlight, styles.match)
    title.truncate(title_width, overflow="ellipsis", pad=True)
    text.append_text(title)
    if badges:
        text.append(" ")
        text.append_text(badges)
    text.append(" ")
    text.append(_cell(columns.status_name(summary.status), columns.status), _status_style(summary.status, styles))
    text.append(_cell(format_duration(summary.duration_ms), DURATION_WIDTH, right=True), styles.dim)
    text.truncate(width, pad=True)
    if worst is Severity.ERROR:
        text.stylize(styles.error_row)
    elif worst is Severity.WARNING:
        text.stylize(styles.warning_row)
    return text
