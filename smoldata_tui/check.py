"""``smoldata-tui check``: the training wrapper's verdict and the findings, for CI and humans.

Traces are analysed on every CPU (small ones in a process pool, a big one in parts: see
``fleet/pool.py`` and ``trace/parallel.py``); the output is in argument order and identical
to one process's (property-tested). A trace that cannot be read is reported in its place and
the others are still checked.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TextIO

import orjson

from smoldata_tui.fleet.aggregate import fleet_totals
from smoldata_tui.fleet.pool import in_order
from smoldata_tui.fleet.summary import EpisodeSummary, add_metadata
from smoldata_tui.fleet.work import analyze_trace
from smoldata_tui.session.metadata import is_trace_name
from smoldata_tui.trace import TraceReport
from smoldata_tui.trace.file_kind import special_kind
from smoldata_tui.trace.parallel import PARALLEL_MIN_BYTES

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad argument or an unreadable path: exit status 2, one clear line."""


@dataclass
class Checked:
    """One trace's result: its summary, plus the report (table) or the ready JSON line (--json)."""

    path: Path
    summary: EpisodeSummary
    report: TraceReport | None = None
    line: bytes | None = None

    @property
    def error(self) -> str | None:
        return self.summary.error

    @property
    def accepted(self) -> bool:
        return self.summary.accepted

    def has_errors(self) -> bool:
        return self.summary.errors > 0


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


def json_line(path: str, report: TraceReport | None, summary: EpisodeSummary) -> bytes:
    if report is None:
        return orjson.dumps({"path": path, "error": summary.error}) + b"\n"
    return orjson.dumps({"path": path, **report.to_json()}) + b"\n"


def check_one(path: str, *, as_json: bool = False, with_metadata: bool = False, big: bool = False) -> Checked:
    """Analyse one trace (in parts on every CPU when ``big``); never raises for a bad file."""
    report, summary = analyze_trace(path, big=big)
    if with_metadata:
        add_metadata(summary)
    if as_json:  # made here, in the worker: the parent only writes bytes
        return Checked(Path(path), summary, line=json_line(path, report, summary))
    return Checked(Path(path), summary, report=report)


def check_all(traces: list[Path], *, as_json: bool, with_metadata: bool, workers: int | None = None):
    """Every trace's :class:`Checked`, in the order given, computed on every CPU."""
    paths = [str(path) for path in traces]
    big = {index for index, path in enumerate(paths) if _size(path) >= PARALLEL_MIN_BYTES}
    # A big trace is split across every CPU by its own pool, made first while this process
    # has no other pool (and no threads) to fork with.
    done = {index: check_one(paths[index], as_json=as_json, with_metadata=with_metadata, big=True) for index in big}
    small = [path for index, path in enumerate(paths) if index not in big]
    work = partial(check_one, as_json=as_json, with_metadata=with_metadata)
    results = in_order(work, small, workers=workers)
    for index in range(len(paths)):
        yield done.pop(index) if index in done else next(results)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def exit_status(results: list[Checked], *, strict: bool) -> int:
    if any(result.error for result in results):
        return EXIT_USAGE
    for result in results:
        if not result.accepted or (strict and result.has_errors()):
            return EXIT_REJECTED
    return EXIT_OK


def run_check(
    paths: list[str], *, as_json: bool, strict: bool, summary: bool = False, out: TextIO | None = None
) -> int:
    out = out or sys.stdout
    traces = collect_traces(paths)
    binary = getattr(out, "buffer", None)
    results: list[Checked] = []
    for result in check_all(traces, as_json=as_json, with_metadata=summary):
        if as_json:
            if binary is not None:
                binary.write(result.line)
            else:
                out.write(result.line.decode())
            result.line = None  # written: do not keep every line until the end
        results.append(result)
    for result in results:
        if result.error is not None:
            print(f"smoldata-tui check: {result.path}: {result.error}", file=sys.stderr)
    if as_json:
        if summary:
            totals = orjson.dumps(fleet_totals(result.summary for result in results).to_json()) + b"\n"
            if binary is not None:
                binary.write(totals)
            else:
                out.write(totals.decode())
        out.flush()
    else:
        from smoldata_tui.check_table import print_summary, print_table

        if summary:
            print_summary(fleet_totals(result.summary for result in results), results, out=out, strict=strict)
        else:
            print_table(results, out=out, strict=strict)
    return exit_status(results, strict=strict)
