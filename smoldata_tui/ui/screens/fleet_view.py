"""What the fleet table shows: its columns, their cells and sort keys, filters and task groups.

Pure functions over :class:`~smoldata_tui.fleet.summary.EpisodeSummary` (no widgets), so the
screen only decides when to redraw. Every string that came from a file (task, model, status,
paths, exception messages) is neutralised and clipped, and cells are ``rich.text.Text``, never
markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rich.text import Text

from smoldata_tui.fleet.aggregate import FleetTotals, TaskTotals
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.store.metadata import parse_time
from smoldata_tui.trace.text import clip

NO_TASK = "(no task)"


def safe(text: object, width: int) -> str:
    return clip(str(text), width)


def short_time(text: str | None) -> str:
    moment = parse_time(text)
    return moment.strftime("%Y-%m-%d %H:%M") if moment else ""


def human(count: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= limit:
            return f"{count / limit:.1f}{suffix}"
    return f"{count:g}"


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.0f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def verdict_cell(s: EpisodeSummary) -> Text:
    if s.error is not None:
        return Text("gone" if s.error.startswith("the trace is gone") else "unreadable", "bold $error")
    if s.native_tool_calls is not None:
        return Text(f"\u2713 {s.native_tool_calls}", "$success")
    if s.crash is not None:
        return Text(f"crash: {safe(s.crash, 60)}", "bold $secondary")
    return Text(f"None: {safe(s.reason, 200)}", "$warning")


def findings_cell(s: EpisodeSummary) -> Text:
    text = Text()
    for count, mark, style in ((s.errors, "\u2717", "bold $error"), (s.warnings, "!", "$warning"), (s.infos, "\u00b7", "dim")):
        if count:
            text.append(f"{mark}{count} ", style)
    return text if text.plain else Text("none", "dim")


def status_cell(s: EpisodeSummary) -> Text:
    if s.meta_error is not None and s.task is None:
        return Text("bad meta", "bold $error")
    if s.status is None:
        return Text("")
    return Text(s.status, "$success" if s.status == "finished" else "$warning")


def grade_cell(s: EpisodeSummary) -> Text:
    if s.grade is None:
        return Text("")
    return Text(s.grade, "$success" if s.passed else ("$error" if s.graded else "$warning"))


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    width: int
    cell: Callable[[EpisodeSummary, Path], Text]
    sort: Callable[[EpisodeSummary], object]
    right: bool = False


def _name(s: EpisodeSummary, folder: Path) -> str:
    """The trace's path within the folder; a saved episode (``<run folder>/run.jsonl``) by its folder."""
    try:
        name = str(Path(s.path).relative_to(folder))
    except ValueError:
        name = s.path
    return name.removesuffix("/run.jsonl") if name != "run.jsonl" else name


def _number(value) -> Callable[[EpisodeSummary, Path], Text]:
    return lambda s, _folder: Text("" if s.error else value(s), justify="right")


COLUMNS: list[Column] = [
    Column("episode", "episode", 30, lambda s, f: Text(safe(_name(s, f), 200)), lambda s: s.path),
    Column("task", "task", 22, lambda s, f: Text(safe(s.task or "", 40)), lambda s: s.task or "\uffff"),
    Column("model", "model", 16, lambda s, f: Text(safe(s.model or "", 40), "dim"), lambda s: s.model or "\uffff"),
    Column("started", "started", 16, lambda s, f: Text(short_time(s.started_at), "dim"), lambda s: s.started_at or ""),
    Column("status", "status", 9, lambda s, f: status_cell(s), lambda s: s.status or "\uffff"),
    Column("grade", "grade", 9, lambda s, f: grade_cell(s), lambda s: (s.env_reward is None, -(s.env_reward or 0))),
    Column("verdict", "verdict", 26, lambda s, f: verdict_cell(s),
           lambda s: (s.error is not None, s.native_tool_calls is None, s.crash is None, s.reason or "", s.native_tool_calls or 0)),
    Column("findings", "findings", 12, lambda s, f: findings_cell(s), lambda s: (-s.errors, -s.warnings, -s.infos)),
    Column("steps", "steps", 5, _number(lambda s: f"{s.steps:,}"), lambda s: s.steps, right=True),
    Column("calls", "calls", 5, _number(lambda s: f"{s.calls:,}"), lambda s: s.calls, right=True),
    Column("tool_errors", "t.err", 5, _number(lambda s: f"{s.tool_errors:,}" if s.tool_errors else ""),
           lambda s: s.tool_errors, right=True),
    Column("tokens", "tokens", 7, _number(lambda s: human(s.tokens)), lambda s: s.tokens, right=True),
    Column("cost", "cost", 7, _number(lambda s: f"${s.cost:.3f}" if s.cost else ""), lambda s: s.cost, right=True),
    Column("duration", "time", 7, lambda s, f: Text(duration_text(s.duration), justify="right"),
           lambda s: s.duration if s.duration is not None else -1, right=True),
]  # fmt: skip
COLUMN_KEYS = [column.key for column in COLUMNS]


@dataclass(frozen=True)
class FleetFilter:
    rejected: bool = False  # None verdicts and wrapper crashes
    crashed: bool = False
    grade_zero: bool = False
    task: str | None = None
    kind: str | None = None  # a finding kind
    signature: str | None = None  # EpisodeSummary.signature
    text: str = ""

    def matches(self, s: EpisodeSummary, folder: Path) -> bool:
        if self.rejected and s.accepted:
            return False
        if self.crashed and not (s.crashed or s.error is not None):
            return False
        if self.grade_zero and s.env_reward != 0:
            return False
        if self.task is not None and (s.task or NO_TASK) != self.task:
            return False
        if self.kind is not None and self.kind not in s.kinds:
            return False
        if self.signature is not None and s.signature != self.signature:
            return False
        if self.text:
            haystack = " ".join(
                str(part) for part in (_name(s, folder), s.task, s.model, s.status, s.grade, s.reason, s.crash,
                                       s.error, s.meta_error, " ".join(s.kinds)) if part
            ).lower()  # fmt: skip
            return all(word in haystack for word in self.text.lower().split())
        return True

    def describe(self) -> str:
        parts = []
        if self.rejected:
            parts.append("rejected")
        if self.crashed:
            parts.append("crashed")
        if self.grade_zero:
            parts.append("grade 0")
        if self.task is not None:
            parts.append(f"task {safe(self.task, 40)}")
        if self.kind is not None:
            parts.append(f"finding {safe(self.kind, 30)}")
        if self.signature is not None:
            parts.append(f"signature {safe(self.signature, 60)}")
        if self.text:
            parts.append(f"\u201c{safe(self.text, 40)}\u201d")
        return ", ".join(parts)

    def toggled(self, name: str) -> FleetFilter:
        return replace(self, **{name: not getattr(self, name)})


NO_FILTER = FleetFilter()


@dataclass(frozen=True)
class GroupRow:
    """A task's heading when the table is grouped by task."""

    task: str
    totals: TaskTotals


Row = EpisodeSummary | GroupRow


def view_rows(
    summaries: list[EpisodeSummary], folder: Path, *, sort_key: str, descending: bool, fleet_filter: FleetFilter,
    grouped: bool,
) -> list[Row]:  # fmt: skip
    column = COLUMNS[COLUMN_KEYS.index(sort_key)]
    shown = [s for s in summaries if fleet_filter.matches(s, folder)] if fleet_filter != NO_FILTER else list(summaries)
    shown.sort(key=lambda s: s.path)  # ties keep path order, in both directions
    shown.sort(key=column.sort, reverse=descending)
    if not grouped:
        return shown
    groups: dict[str, list[EpisodeSummary]] = {}
    for summary in shown:
        groups.setdefault(summary.task or NO_TASK, []).append(summary)
    rows: list[Row] = []
    for task in sorted(groups, key=lambda name: (name == NO_TASK, name)):
        totals = FleetTotals()
        for summary in groups[task]:
            totals.add(replace(summary, task=task))
        rows.append(GroupRow(task, totals.tasks[task]))
        rows.extend(groups[task])
    return rows


def group_cell(row: GroupRow, width: int) -> Text:
    totals = row.totals
    text = Text(f"\u25be {safe(row.task, 40)}", "bold")
    rate = f"{100 * totals.pass_rate:.0f}%" if totals.pass_rate is not None else "—"
    accepted = f"{100 * totals.acceptance:.0f}%" if totals.acceptance is not None else "—"
    text.append(
        f"   {totals.episodes:,} episodes · pass rate {rate} ({totals.passed:,}/{totals.graded:,} graded)"
        f" · accepted by the wrapper {accepted}",
        "$accent",
    )
    text.truncate(width)
    return text


def header_lines(totals: FleetTotals, *, shown: int, width: int) -> list[Text]:
    """The fleet's aggregates: two lines above the table."""
    first = Text(f"{totals.traces:,} episodes", "bold")
    if totals.traces:
        accepted = 100 * totals.accepted / totals.traces
        first.append(f" · accepted by the wrapper {accepted:.1f}% ({totals.accepted:,})", "$success")
        first.append(f" · rejected {totals.rejected:,}", "$warning" if totals.rejected else "dim")
        first.append(f" · crashes {totals.crashes:,}", "bold $secondary" if totals.crashes else "dim")
        if totals.unreadable:
            first.append(f" · unreadable {totals.unreadable:,}", "bold $error")
        rate = totals.pass_rate
        first.append(
            f" · pass rate {100 * rate:.1f}% ({totals.passed:,}/{totals.graded:,} graded)" if rate is not None else " · no grades",
            "$accent",
        )
        first.append(f" · tokens {human(totals.tokens)} · cost ${totals.cost:,.2f}")
        if shown != totals.traces:
            first.append(f" · showing {shown:,}", "bold")
    second = Text("rejections: ", "dim")
    if totals.reasons:
        for index, (reason, count) in enumerate(totals.reasons.most_common()):
            if index:
                second.append(" · ", "dim")
            second.append(f"{count:,}\u00d7 ", "bold")
            second.append(safe(reason, 60))
    else:
        second.append("none", "dim")
    for line in (first, second):
        line.truncate(width, overflow="ellipsis")
    return [first, second]
