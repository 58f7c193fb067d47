"""``smoldata-tui check``: the training wrapper's verdict and the findings, for CI and humans."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.session.metadata import is_trace_name
from typing import TextIO

import orjson

from smoldata_tui.trace import Severity, TraceReport
from smoldata_tui.trace.export_doc import account_for_export
from smoldata_tui.trace.parallel import analyze_path_parallel

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument or an unreadable path: exit status 2, one clear line."""


@dataclass
class Checked:
    path: Path
    report: TraceReport

    @property
    def accepted(self) -> bool:
        return self.report.verdict.failure is None

    def has_errors(self) -> bool:
        return any(finding.severity is Severity.ERROR for finding in self.report.findings)


def collect_traces(arguments: list[str]) -> list[Path]:
    """Files as given; directories expand to their ``*.jsonl`` traces (recursively, sorted; a
    proxy trace beside an episode is not one)."""
    if not arguments:
        raise UsageError("give at least one trace file or directory")
    traces: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.jsonl") if p.is_file() and is_trace_name(p.name))
            if not found:
                raise UsageError(f"{argument}: no *.jsonl trace files in this directory")
            traces.extend(found)
        elif path.exists():
            traces.append(path)
        else:
            raise UsageError(f"{argument}: no such file or directory")
    return traces


def check_one(path: Path) -> Checked:
    try:
        report = account_for_export(path, analyze_path_parallel(path))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return Checked(path, report)


def exit_status(results: list[Checked], *, strict: bool) -> int:
    for result in results:
        if not result.accepted or (strict and result.has_errors()):
            return EXIT_REJECTED
    return EXIT_OK


def json_line(result: Checked) -> bytes:
    data = {"path": str(result.path), **result.report.to_json()}
    return orjson.dumps(data) + b"\n"


def run_check(paths: list[str], *, as_json: bool, strict: bool, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    traces = collect_traces(paths)
    results: list[Checked] = []
    for path in traces:
        result = check_one(path)
        results.append(result)
        if as_json:
            out.write(json_line(result).decode())
            out.flush()
    if not as_json:
        from smoldata_tui.check_table import print_table

        print_table(results, out=out, strict=strict)
    return exit_status(results, strict=strict)
