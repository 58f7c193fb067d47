"""The human-readable output of ``smoldata-tui check``: a Rich table, then the reasons.

Every cell is a ``rich.text.Text`` built from already-neutralised strings, so
agent output in a finding is never read as markup or escape sequences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from smoldata_tui.trace import Finding, Severity
from smoldata_tui.trace.text import clip

if TYPE_CHECKING:
    from smoldata_tui.check import Checked

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}
_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
MAX_EXPLAINING = 12  # error findings listed per rejected trace before "… and N more"


def _verdict_cell(result: Checked) -> Text:
    verdict = result.report.verdict
    if verdict.failure is None:
        return Text(str(verdict.native_tool_calls), style="green")
    if verdict.wrapper_crash:
        return Text(f"crash: {verdict.wrapper_crash}", style="bold magenta")
    return Text("None", style="bold red")


def _where(finding: Finding) -> str:
    return f"line {finding.line}" if finding.line is not None else "stream"


def _first_finding(result: Checked) -> Text:
    """The finding that explains the verdict when there is one, else the most severe."""
    failure = result.report.verdict.failure
    verdict_line = failure.line if failure else None
    findings = sorted(
        result.report.findings,
        key=lambda f: (f.line != verdict_line or f.line is None, _RANK[f.severity], f.line or 0),
    )
    if not findings:
        return Text("—", style="dim")
    first = findings[0]
    return Text(f"{_where(first)}: {clip(first.message, 90)}", style=_SEVERITY_STYLE[first.severity])


def _count(value: int, style: str) -> Text:
    return Text(str(value), style=style if value else "dim")


def print_table(results: list[Checked], *, out: TextIO, strict: bool) -> None:
    console = Console(file=out, highlight=False, soft_wrap=False)
    table = Table(show_lines=False, expand=True)
    table.add_column("trace", overflow="fold", ratio=2)
    table.add_column("verdict", justify="right", no_wrap=True, min_width=7)
    table.add_column("errors", justify="right", no_wrap=True, min_width=6)
    table.add_column("warnings", justify="right", no_wrap=True, min_width=8)
    table.add_column("info", justify="right", no_wrap=True, min_width=4)
    table.add_column("first finding", overflow="ellipsis", no_wrap=True, ratio=3)
    for result in results:
        counts = result.report.severity_counts()
        table.add_row(
            Text(clip(str(result.path), 80)),
            _verdict_cell(result),
            _count(counts["error"], "bold red"),
            _count(counts["warning"], "yellow"),
            _count(counts["info"], "dim"),
            _first_finding(result),
        )
    console.print(table)

    for result in results:
        if result.accepted and not (strict and result.has_errors()):
            continue
        console.print()
        console.print(Text(clip(str(result.path), 120), style="bold"))
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

    rejected = sum(1 for r in results if not r.accepted)
    summary = f"{len(results)} trace{'s' if len(results) != 1 else ''} checked, {rejected} rejected by the training wrapper"
    if strict:
        failing = sum(1 for r in results if r.accepted and r.has_errors())
        summary += f", {failing} accepted with error findings (--strict)"
    console.print()
    console.print(Text(summary, style="bold"))

