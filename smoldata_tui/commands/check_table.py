"""The human-readable output of ``smoldata-tui check``: a Rich table, then the reasons.

Every cell is a ``rich.text.Text`` built from already-neutralised strings, so
agent output in a finding is never read as markup or escape sequences.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.text import Text

from smoldata_tui.commands.text_console import bounded, cell_limit, text_console
from smoldata_tui.trace import Finding, Severity
from smoldata_tui.trace.text import clip, neutralize

if TYPE_CHECKING:
    from smoldata_tui.fleet.checked import Checked
    from smoldata_tui.fleet.aggregate import FleetTotals

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
MAX_EXPLAINING = 12  # error findings listed per rejected trace before "… and N more"


def _verdict_cell(result: Checked) -> Text:
    if result.error is not None:
        return Text("unreadable", style="bold red")
    verdict = result.report.verdict
    if verdict.failure is None:
        return Text(str(verdict.native_tool_calls), style="green")
    if verdict.wrapper_crash:
        return Text(f"crash: {verdict.wrapper_crash}", style="bold magenta")
    return Text("None", style="bold red")


def _where(finding: Finding) -> str:
    return f"line {finding.line}" if finding.line is not None else "stream"


def _first_finding(result: Checked, limit: int) -> Text:
    """The finding that explains the verdict when there is one, else the most severe (its
    sentence cut at ``limit``)."""
    if result.error is not None:
        return Text(clip(result.error, max(limit, 200)), style="bold red")
    failure = result.report.verdict.failure
    verdict_line = failure.line if failure else None
    findings = sorted(
        result.report.findings,
        key=lambda f: (f.line != verdict_line or f.line is None, _RANK[f.severity], f.line or 0),
    )
    if not findings:
        return Text("—", style="dim")
    first = findings[0]
    return Text(f"{_where(first)}: {clip(first.message, limit)}", style=_SEVERITY_STYLE[first.severity])


def _common_folder(results: list[Checked]) -> Path | None:
    folders = {result.path.parent for result in results}
    if len(results) > 1 and len(folders) == 1:
        return folders.pop()
    return None


def _fit_name(text: str, width: int) -> str:
    """Cut from the left: the file name at the end is what tells traces apart."""
    return text if len(text) <= width else "\u2026" + text[len(text) - width + 1 :]


def print_table(results: list[Checked], *, out: TextIO, strict: bool, missing: list[str] = ()) -> None:
    """One aligned row per trace (plain columns, so narrow terminals stay readable)."""
    console = text_console(out)
    path_limit = cell_limit(console, 200)
    folder = _common_folder(results)  # name files relative to it, to leave room for the findings
    if folder is not None:
        console.print(Text(clip(f"{folder}{os.sep}", path_limit), style="bold"))
    names = [clip(result.path.name if folder else str(result.path), path_limit) for result in results]
    verdicts = [_verdict_cell(result) for result in results]
    longest_name = max(len(name) for name in names)
    name_width = max(5, min(40, longest_name) if bounded(console) else longest_name)
    verdict_width = max(7, max(len(verdict.plain) for verdict in verdicts))
    before_finding = name_width + 2 + verdict_width + 2 + 3 * 5 + 1  # the row's cells up to the finding
    finding_width = max(20, console.width - before_finding)
    finding_limit = cell_limit(console, 90)
    header = Text(f"{'trace':<{name_width}}  {'verdict':>{verdict_width}}  {'err':>4} {'warn':>4} {'info':>4}  first finding")
    header.stylize("bold underline")
    console.print(header)
    for name, verdict, result in zip(names, verdicts, results):
        summary = result.summary
        counts = {"error": summary.errors, "warning": summary.warnings, "info": summary.infos}
        row = Text(f"{_fit_name(name, name_width):<{name_width}}  ")
        row.append(" " * (verdict_width - len(verdict.plain)))
        row.append_text(verdict)
        row.append("  ")
        for key, style in (("error", "bold red"), ("warning", "yellow"), ("info", "dim")):
            row.append(f"{counts[key]:>4} ", style=style if counts[key] else "dim")
        first = _first_finding(result, finding_limit)
        first.truncate(finding_width, overflow="ellipsis")
        row.append(" ")
        row.append_text(first)
        console.print(row, no_wrap=True, crop=True)

    for result in results:
        if result.accepted and not (strict and result.has_errors()):
            continue
        console.print()
        console.print(Text(clip(str(result.path), 120), style="bold"))
        if result.error is not None:
            console.print(Text(f"  {clip(result.error, 200)}", style="bold red"))
            continue
        verdict = result.report.verdict
        if verdict.failure is not None:
            line = Text("  verdict: ", style="bold")
            line.append(clip(verdict.badge(), 200))
            console.print(line)
            console.print(Text(f"  why: {clip(verdict.failure.explanation, 200)}"))
        errors = [f for f in result.report.findings if f.severity is Severity.ERROR]
        for finding in errors[:MAX_EXPLAINING]:
            row = Text("  ")
            row.append(f"{_where(finding):>10}  ", style="cyan")
            row.append(f"{finding.kind:<18} ", style=_SEVERITY_STYLE[finding.severity])
            row.append(finding.message)
            console.print(row)
        if len(errors) > MAX_EXPLAINING:
            console.print(Text(f"  … and {len(errors) - MAX_EXPLAINING} more errors", style="dim"))

    rejected = sum(1 for r in results if r.summary.rejected)
    crashes = sum(1 for r in results if r.summary.crashed)
    summary = f"{len(results)} trace{'s' if len(results) != 1 else ''} checked, {_rejected(rejected)}, {_crashes(crashes)}"
    unreadable = sum(1 for r in results if r.error is not None)
    if unreadable:
        summary += f", {unreadable} unreadable"
    if missing:
        summary += f", {_not_found(missing)}"
    if strict:
        failing = sum(1 for r in results if r.accepted and r.has_errors())
        summary += f", {failing} accepted with error findings (--strict)"
    console.print()
    console.print(Text(summary, style="bold"))



def _rejected(count: int) -> str:
    return f"{count:,} rejected (None)"


def _crashes(count: int) -> str:
    """Not a rejection: the exception escapes the wrapper, and the training step fails."""
    return f"{count:,} would crash the wrapper"


def _not_found(missing: list[str]) -> str:
    return f"{len(missing)} path{'s' if len(missing) != 1 else ''} not found"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def print_summary(
    totals: FleetTotals, results: list[Checked], *, out: TextIO, strict: bool, missing: list[str] = ()
) -> None:
    """``check --summary``: the fleet's totals instead of one row per trace."""
    console = text_console(out)

    def safe(text: object, width: int = 120) -> str:
        return neutralize(clip(str(text), cell_limit(console, width)), keep_newlines=False)

    head = Text(f"{totals.traces:,} trace{'s' if totals.traces != 1 else ''}: ", style="bold")
    head.append(f"{totals.accepted:,} accepted ({_percent(totals.accepted, totals.traces)})", style="green")
    head.append(f", {_rejected(totals.rejected)}", style="bold red" if totals.rejected else "dim")
    head.append(f", {_crashes(totals.crashes)}", style="bold magenta" if totals.crashes else "dim")
    if totals.unreadable:
        head.append(f", {totals.unreadable:,} unreadable", style="bold red")
    if missing:
        head.append(f", {_not_found(missing)}", style="bold red")
    console.print(head)
    console.print(Text(f"tool calls counted (sum of the int verdicts): {totals.tool_calls:,}"))
    if strict:
        failing = sum(1 for r in results if r.accepted and r.has_errors())
        console.print(Text(f"accepted with error findings (--strict): {failing:,}"))
    for title, counts in (("rejection reasons", totals.reasons), ("findings by kind", totals.findings)):
        if counts:
            console.print()
            console.print(Text(title, style="bold underline"))
            for name, count in counts.most_common():
                console.print(Text(f"{count:>8,}  {safe(name)}"))
    if totals.tasks:
        console.print()
        task_width = 32 if bounded(console) else max(32, *(len(safe(name)) for name in totals.tasks))
        header = Text(f"{'task':<{task_width}} {'episodes':>8} {'graded':>7} {'passed':>7} {'pass rate':>9} {'accepted':>9}")
        header.stylize("bold underline")
        console.print(header)
        for name in sorted(totals.tasks):
            task = totals.tasks[name]
            console.print(Text(
                f"{safe(name, task_width):<{task_width}} {task.episodes:>8,} {task.graded:>7,} {task.passed:>7,} "
                f"{_percent(task.passed, task.graded):>9} {_percent(task.accepted, task.episodes):>9}"
            ))  # fmt: skip
    bad_meta = [r for r in results if r.summary.meta_error is not None]
    if bad_meta:
        console.print()
        console.print(Text(f"{len(bad_meta):,} run.meta.json file{'s' if len(bad_meta) != 1 else ''} not used "
                           "(or used in part): an episode without one counts in no task", style="yellow"))  # fmt: skip
        for result in bad_meta[:MAX_EXPLAINING]:
            console.print(Text(f"  {safe(result.path.parent, 80)}: {safe(result.summary.meta_error, 200)}"))
    errors = [r for r in results if r.error is not None]
    if errors:
        console.print()
    for result in errors[:MAX_EXPLAINING]:
        console.print(Text(f"{safe(result.path, 120)}: {safe(result.error, 200)}", style="bold red"))
    if len(errors) > MAX_EXPLAINING:
        console.print(Text(f"… and {len(errors) - MAX_EXPLAINING} more unreadable traces", style="dim"))
