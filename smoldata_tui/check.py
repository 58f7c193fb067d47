"""``smoldata-tui check``: the training wrapper's verdict and the findings, for CI and humans."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.session.metadata import is_trace_name
from typing import TextIO

import orjson

from smoldata_tui.trace import Severity, TraceReport
from smoldata_tui.trace.file_kind import special_kind
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


def collect_traces(arguments: list[str], err: TextIO | None = None) -> list[Path]:
    """Files as given; directories expand to their ``*.jsonl`` traces (recursively, sorted; a
    proxy trace beside an episode is not one). Only regular files are read: a FIFO or a device
    named as an argument is a usage error, one found in a directory is skipped with a line on
    ``err`` (reading it would block, or never end)."""
    if not arguments:
        raise UsageError("give at least one trace file or directory")
    traces: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = []
            for candidate in sorted(p for p in path.rglob("*.jsonl") if is_trace_name(p.name)):
                kind = special_kind(candidate)
                if kind is not None and kind != "a directory":
                    print(f"smoldata-tui check: skipped {candidate}: {kind}, not a regular file", file=err or sys.stderr)
                elif candidate.is_file():
                    found.append(candidate)
            if not found:
                raise UsageError(f"{argument}: no *.jsonl trace files in this directory")
            traces.extend(found)
        elif path.exists():
            kind = special_kind(path)
            if kind is not None:
                raise UsageError(f"{argument}: {kind}, not a regular file (save the stream to a file first)")
            traces.append(path)
        else:
            raise UsageError(f"{argument}: no such file or directory")
    return traces


def check_one(path: Path) -> Checked:
    try:
        report = analyze_path_parallel(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    from smoldata_tui.training.config_findings import sidecar_findings

    report.findings.extend(sidecar_findings(path))  # the episode's configuration, when its sidecars sit beside it
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
