"""``smoldata-tui run --headless``: one episode, one line per event as it arrives, one JSON line at the end.

Stage progress goes to stderr, events to stdout. The last stdout line is a JSON object with
``task``, ``status``, ``exit_code``, ``native_tool_calls``, ``findings`` (counts by severity),
``grade`` (``env_reward``, or null with the grader error), ``trace`` (the saved path) and, for a
replay, ``divergences``: one line per place the replay stopped matching its recording.
Exit 0 when the episode was graded (whatever the grade), 1 when it could not be (an
infrastructure failure, said in one line), 2 for usage errors.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import TextIO

from smoldata_tui.session.episode import Episode, EpisodeResult, EpisodeSpec
from smoldata_tui.session.model_endpoint import EndpointError, open_endpoint
from smoldata_tui.session.replay_divergence import describe_divergence
from smoldata_tui.tasks import TaskError, default_task_root, load_task
from smoldata_tui.trace import TraceAnalysis
from smoldata_tui.trace.summary import format_offset, summarize_line
from smoldata_tui.trace.text import clip


class UsageError(Exception):
    """Bad arguments: exit 2 with this message."""


class HeadlessPrinter:
    """Prints stage lines and one line per event, reading event bytes back from the trace file."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
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
        print(clip(text, 400), file=self.err, flush=True)

    def received(self, data: bytes) -> None:
        self.analysis.feed(data)
        self._print_new()

    def finish(self) -> None:
        self.analysis.finish()
        self._print_new()

    def _print_new(self) -> None:
        events = self.analysis.events
        if self.trace_path is None or self._printed >= len(events):
            return
        with open(self.trace_path, "rb") as trace:
            for record in events[self._printed :]:
                raw = os.pread(trace.fileno(), record.length, record.offset)
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
                print(clip("  ".join(columns), 300), file=self.out, flush=True)
        self._printed = len(events)


def _find_task(name: str, tasks_dir: str | None):
    root = Path(tasks_dir) if tasks_dir else default_task_root()
    folder = root / name
    if not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))) if root.is_dir() else []
        hint = f" (tasks in {root}: {', '.join(known)})" if known else ""
        raise UsageError(f"no task {name!r} in {root}{hint}")
    return load_task(folder)


def summary_json(result: EpisodeResult, printer: HeadlessPrinter) -> dict:
    report = printer.analysis.report()
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
        "grade": grade,
        "trace": str(result.trace_path),
        "metadata": str(result.metadata_path),
        "recovered_calls": len(result.recovered),
        "divergences": [describe_divergence(record) for record in result.divergences],
        "error": str(result.error) if result.error else None,
    }


def episode_spec(args) -> EpisodeSpec:
    """The episode the arguments describe; raises TaskError, EndpointError or UsageError."""
    task = _find_task(args.task, args.tasks)
    daytona = None
    if args.backend == "daytona":
        from smoldata_tui.sandbox.daytona.settings import DaytonaCredentialsMissing, DaytonaSettings, has_api_key

        if not has_api_key():  # before any work: no sandbox, no install, no model endpoint
            raise UsageError(str(DaytonaCredentialsMissing()))
        daytona = DaytonaSettings.from_environment(snapshot=getattr(args, "daytona_snapshot", None))
    harness = getattr(args, "harness", "builtin")
    if harness == "opencode-env":
        from smoldata_tui.session.opencode_env_harness import HarnessUnavailable, require_opencode_env

        try:
            require_opencode_env()
        except HarnessUnavailable as exc:
            raise UsageError(str(exc)) from None
    endpoint = open_endpoint(model=args.model, base_url=args.base_url, api_key=args.api_key)
    return EpisodeSpec(
        task=task,
        endpoint=endpoint,
        backend=args.backend,
        timeout_s=args.timeout,
        save_dir=Path(args.save),
        opencode_version=args.opencode_version,
        opencode_bin=args.opencode_bin,
        daytona=daytona,
        harness=harness,
    )


def run_live_or_headless(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        spec = episode_spec(args)
    except (TaskError, EndpointError, UsageError) as exc:
        print(f"smoldata-tui run: {exc}", file=err)
        return 2
    if not args.headless:
        from smoldata_tui.ui.live_app import run_live

        return run_live(spec)
    return run_headless(spec, out, err)


def run_headless(spec: EpisodeSpec, out: TextIO, err: TextIO) -> int:
    printer = HeadlessPrinter(out, err)
    episode = Episode(spec, printer)
    # SIGTERM (a CI job cancelled) stops the agent and still saves and releases everything.
    previous = {sig: signal.signal(sig, lambda *_: episode.cancel()) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        result = episode.run()
    except KeyboardInterrupt:
        print("smoldata-tui run: interrupted; the sandbox was released", file=err)
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    printer.finish()
    for record in result.divergences:
        print(f"[replay] diverged: {describe_divergence(record, limit=160)}", file=err, flush=True)
    print(json.dumps(summary_json(result, printer), ensure_ascii=False), file=out, flush=True)
    if result.error is not None:
        print(f"smoldata-tui run: {result.error}", file=err)
    return 0 if result.graded else 1
