"""The headless output of ``smoldata-tui run`` (one episode, and a batch's lines): stage lines on
stderr, one stdout line per event as it arrives, the last JSON line, and the stops (the signals
that cancel, a stdout whose reader went away).
"""

from __future__ import annotations

import os
import select
import signal
import stat
import threading
from pathlib import Path
from typing import TextIO

from smoldata_tui.commands.fork import fork_report
from smoldata_tui.replay.divergence import describe_divergence
from smoldata_tui.session.episode import EpisodeResult
from smoldata_tui.trace import TraceAnalysis
from smoldata_tui.trace.number_format import format_offset
from smoldata_tui.trace.reader import HUGE_LINE_BYTES, HUGE_PREFIX_BYTES
from smoldata_tui.trace.summary import summarize_line
from smoldata_tui.trace.text import clip


class HeadlessPrinter:
    """Prints stage lines and one line per event, reading event bytes back from the trace file.
    When the reader of stdout goes away (``| head -1``), ``on_closed`` is called once and
    nothing more is printed there."""

    def __init__(self, out: TextIO, err: TextIO, on_closed=None) -> None:
        self.out, self.err = out, err
        self.on_closed = on_closed
        self.closed = False
        self.analysis = TraceAnalysis(keep_events=True)
        self.trace_path: Path | None = None
        self._printed = 0
        self._first_ms: float | None = None

    def opened(self, trace_path: Path) -> None:
        self.trace_path = trace_path
        print(f"[episode] saving to {trace_path.parent}", file=self.err, flush=True)

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        text = f"[{name}] {state}" + (f" {elapsed_s:.1f}s" if state in ("done", "failed") else "")
        if message:
            text += f": {message}"
        print(clip(text, 400 if state != "failed" else 700), file=self.err, flush=True)  # a failure's reason comes last: whole

    def received(self, data: bytes) -> None:
        self.analysis.feed(data)
        self._print_new()

    def finish(self) -> None:
        self.analysis.finish()
        self._print_new()

    def print_line(self, line: str) -> None:
        if self.closed:
            return
        try:
            print(line, file=self.out, flush=True)
        except BrokenPipeError:
            self.closed = True
            # Later flushes (at exit too) go nowhere instead of raising again.
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), self.out.fileno())
            if self.on_closed is not None:
                self.on_closed()

    def _print_new(self) -> None:
        events = self.analysis.events
        if self.closed or self.trace_path is None or self._printed >= len(events):
            return
        with open(self.trace_path, "rb") as trace:
            for record in events[self._printed :]:
                length = record.length if record.length <= HUGE_LINE_BYTES else HUGE_PREFIX_BYTES  # a huge line: its head
                raw = os.pread(trace.fileno(), length, record.offset)
                summary = summarize_line(raw, record.kind, record.piece)
                if self._first_ms is None and record.timestamp is not None:
                    self._first_ms = record.timestamp
                offset = record.timestamp - self._first_ms if record.timestamp is not None and self._first_ms is not None else None
                columns = [
                    f"{record.line:>5}",
                    f"{format_offset(offset):>10}",
                    f"{record.kind:<12}",
                    f"{record.tool or '':<10}",
                    f"{summary.status or '':<10}",
                    summary.title,
                ]
                self.print_line(clip("  ".join(columns), 300))
        self._printed = len(events)


def summary_json(result: EpisodeResult, printer: HeadlessPrinter) -> dict:
    from smoldata_tui.episode.findings import episode_findings

    report = printer.analysis.report()
    # What check and the viewer add to the stream's findings, read from the files just saved.
    report.findings.extend(episode_findings(result.trace_path, report.findings, report.stats.calls_by_tool,
                                            result.metadata))  # fmt: skip
    codes: dict[str, int] = {}
    for finding in report.findings:
        codes[finding.kind] = codes.get(finding.kind, 0) + 1
    grade = None
    if result.grade is not None:
        grade = {
            "env_reward": result.grade.env_reward,
            "correctness": result.grade.correctness,
            "grader_error": result.grade.grader_error,
        }
    return {
        "task": result.metadata.task,
        "status": result.status,
        "exit_code": result.exit_code,
        "native_tool_calls": report.verdict.native_tool_calls,
        "wrapper_crash": report.verdict.wrapper_crash,
        "verdict": report.verdict.badge(),
        "findings": report.severity_counts(),
        "finding_codes": codes,
        "grade": grade,
        "trace": str(result.trace_path),
        "metadata": str(result.metadata_path),
        "capture_level": result.metadata.capture.get("level"),  # null with --no-capture, or when capture failed
        "capture_failed": result.metadata.capture.get("failed"),  # why the capture proxy could not start, else null
        "training_trace": str(result.trace_path.with_name(training)) if (training := result.metadata.capture.get("training_trace")) else None,
        "sampling": result.metadata.capture.get("sampling"),  # training's policy on the capture session, or null (engine defaults)
        "context_window": result.metadata.capture.get("context_window"),  # for the budget forecast, or null (unknown)
        "recovered_calls": len(result.recovered),
        "divergences": [describe_divergence(record) for record in result.divergences],
        "caps_hit": list(result.metadata.caps_hit),
        "error": str(result.error) if result.error else None,
        "fork": fork_report(result),
    }


def watch_reader(out: TextIO, on_closed, done: threading.Event) -> None:
    """When stdout is a pipe, call ``on_closed`` as soon as its reader goes away (``| head -1``),
    not at the next line printed: a long tool call prints nothing for minutes."""
    try:
        fd = out.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
    except (AttributeError, OSError, ValueError):
        return
    poller = select.poll()
    poller.register(fd, select.POLLERR)  # on a pipe's write end: its read end was closed

    def watch() -> None:
        while not done.is_set():
            if poller.poll(500):
                on_closed()
                return

    threading.Thread(target=watch, name="stdout-reader-watch", daemon=True).start()


STOP_SIGNALS = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP", signal.SIGINT: "SIGINT (Ctrl+C)"}
