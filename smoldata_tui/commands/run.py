"""``smoldata-tui run --headless``: one episode, one line per event as it arrives, one JSON line at the end.

Stage progress goes to stderr, events to stdout. The last stdout line is a JSON object with
``task``, ``status``, ``exit_code``, ``native_tool_calls``, ``findings`` (counts by severity),
``grade`` (``env_reward``, or null with the grader error), ``trace`` (the saved path), for a
replay ``divergences`` (one line per place the replay stopped matching its recording),
``capture_level``, ``capture_failed`` (why the capture proxy could not start, or null),
``training_trace`` (``run.training.json``'s path, or null), ``sampling`` (``--sampling``'s policy,
or null) and ``context_window`` (or null).
Exit 0 when the agent finished and its answer was graded (whatever the grade), 1 when not (a
timeout, a cancel, an infrastructure failure said in one line, a grader that could not grade),
2 for usage errors. SIGTERM, SIGHUP, SIGINT (exit 130) and a closed stdout (``| head``) stop the
agent, save what was received and release the sandbox.
"""

from __future__ import annotations

import json
import math
import os
import select
import stat
import tempfile
import threading
import signal
import sys
from pathlib import Path
from typing import TextIO

from smoldata_tui.commands.fork import fork_line, fork_report, open_model_endpoint, prepare_fork
from smoldata_tui.session.episode import Episode, EpisodeResult, EpisodeSpec
from smoldata_tui.replay.model_endpoint import EndpointError
from smoldata_tui.replay.divergence import describe_divergence
from smoldata_tui.tasks import TaskError, default_task_root, load_task
from smoldata_tui.trace import TraceAnalysis
from smoldata_tui.trace.number_format import format_offset
from smoldata_tui.trace.reader import HUGE_LINE_BYTES, HUGE_PREFIX_BYTES
from smoldata_tui.trace.summary import summarize_line
from smoldata_tui.trace.text import clip
from smoldata_tui.training.sampling import SamplingError, parse_sampling


class UsageError(Exception):
    """Bad arguments: exit 2 with this message."""



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


def find_task(name: str, tasks_dir: str | None):
    root = Path(tasks_dir) if tasks_dir else default_task_root()
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UsageError(f"--task takes the name of a task folder inside {root} (e.g. sales-top-region), not a path: {name!r}")
    folder = root / name
    if not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))) if root.is_dir() else []
        hint = f" (tasks in {root}: {', '.join(known)})" if known else ""
        raise UsageError(f"no task {name!r} in {root}{hint}")
    return load_task(folder)


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


def _check_timeout(seconds: float) -> float:
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, not {seconds:g}")
    return seconds


def _check_save_dir(folder: str) -> Path:
    """The folder episodes are saved in, made and proven writable now: not after the agent ran."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--save {folder}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe, name = tempfile.mkstemp(prefix=".smoldata-write-test-", dir=path)
        os.close(probe)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"--save {folder}: cannot write there ({exc.strerror or exc})") from None
    return path


# Options whose empty value would quietly mean something else (the current folder, the default).
TEXT_OPTIONS = ("tasks", "save", "model", "base_url", "opencode_version", "opencode_bin", "daytona_snapshot",
                "daytona_target")  # fmt: skip
DAYTONA_RESOURCES = {"daytona_cpu": "cpu", "daytona_memory": "memory_gb", "daytona_disk": "disk_gb"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_text_options(args) -> None:
    """A blank value is a mistake, not a request for the default: say so before any work."""
    if any(not name.strip() for name in getattr(args, "task", None) or []):
        raise UsageError("--task is empty: give a task folder's name (`smoldata-tui tasks` lists them)")
    for name in TEXT_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            raise UsageError(f"{_flag(name)} is empty: give it a value, or leave it out for its default")
    version = getattr(args, "opencode_version", None)
    if version is not None:
        from smoldata_tui.opencode.install import OpenCodeInstallError, _checked_version

        try:
            _checked_version(version)
        except OpenCodeInstallError as exc:
            raise UsageError(f"--opencode-version: {exc}") from None


def _positive_int(flag: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{flag} must be a positive whole number, not {raw!r}")
    return value


def daytona_settings(args):
    """The Daytona sandbox the options ask for; raises UsageError for a missing key, an unusable
    ``DAYTONA_API_URL``, resources that are no positive integers or that a snapshot would ignore."""
    from smoldata_tui.sandbox.daytona.settings import DaytonaCredentialsMissing, DaytonaSettings, api_url_problem, has_api_key

    if not has_api_key():  # before any work: no sandbox, no install, no model endpoint
        raise UsageError(str(DaytonaCredentialsMissing()))
    if (problem := api_url_problem()) is not None:
        raise UsageError(problem)
    resources = {field: _positive_int(_flag(name), raw) for name, field in DAYTONA_RESOURCES.items()
                 if (raw := getattr(args, name, None)) is not None}  # fmt: skip
    settings = DaytonaSettings.from_environment(snapshot=getattr(args, "daytona_snapshot", None),
                                                target=getattr(args, "daytona_target", None), **resources)  # fmt: skip
    if resources and settings.snapshot:
        flags = ", ".join(_flag(name) for name in DAYTONA_RESOURCES if getattr(args, name, None) is not None)
        raise UsageError(f"{flags}: a sandbox made from snapshot {settings.snapshot!r} has the snapshot's resources "
                         "(the snapshot comes from --daytona-snapshot, $DATA_AGENT_DAYTONA_SNAPSHOT or $DAYTONA_SNAPSHOT)")
    return settings


def episode_spec(args, task_name: str | None = None) -> EpisodeSpec:
    """The episode the arguments describe (``task_name``: one of a batch's); raises TaskError,
    EndpointError or UsageError."""
    timeout_s = _check_timeout(args.timeout)
    check_text_options(args)
    task = find_task(task_name if task_name is not None else args.task, args.tasks)
    daytona = None
    if args.backend == "daytona":
        daytona = daytona_settings(args)
    elif given := [_flag(name) for name in (*DAYTONA_RESOURCES, "daytona_target", "daytona_snapshot")
                   if getattr(args, name, None) is not None]:  # fmt: skip
        raise UsageError(f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} with --backend daytona")
    harness = getattr(args, "harness", "builtin")
    if harness == "opencode-env":
        from smoldata_tui.session.opencode_env_harness import HarnessUnavailable, require_opencode_env

        try:
            require_opencode_env()
        except HarnessUnavailable as exc:
            raise UsageError(str(exc)) from None
    sampling = _sampling_policy(args, harness)
    context_window = _context_window(args, harness)
    save_dir = _check_save_dir(args.save)
    endpoint = open_model_endpoint(args)
    return EpisodeSpec(
        task=task,
        endpoint=endpoint,
        backend=args.backend,
        timeout_s=timeout_s,
        save_dir=save_dir,
        opencode_version=args.opencode_version,
        opencode_bin=args.opencode_bin,
        daytona=daytona,
        harness=harness,
        capture=not getattr(args, "no_capture", False),
        sampling=sampling,
        context_window=context_window,
    )


def _context_window(args, harness: str) -> int | None:
    """``--context-window N``: recorded in the capture record, which --no-capture has not."""
    raw = getattr(args, "context_window", None)
    if raw is None:
        return None
    if getattr(args, "no_capture", False) or harness == "opencode-env":
        raise UsageError("--context-window is recorded by the capture proxy: it cannot be used with "
                         + ("--no-capture" if getattr(args, "no_capture", False) else "--harness opencode-env"))
    return _positive_int("--context-window", raw)


def _sampling_policy(args, harness: str) -> dict | None:
    """Training's sampling policy from ``--sampling``; it is applied by the capture proxy's session,
    so without that proxy it is a usage error, not a policy silently dropped or half sent."""
    items = getattr(args, "sampling", None)
    if not items:
        return None
    if getattr(args, "no_capture", False) or harness == "opencode-env":
        flag = "--no-capture" if getattr(args, "no_capture", False) else "--harness opencode-env"
        raise UsageError(f"--sampling is applied by the capture proxy, as in training: it cannot be used with {flag}")
    try:
        return parse_sampling(items)
    except SamplingError as exc:
        raise UsageError(str(exc)) from None


def run_live_or_headless(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        prepare_fork(args)
    except UsageError as exc:
        print(f"smoldata-tui run: {exc}", file=err)
        return 2
    names = list(getattr(args, "task", None) or [])
    if getattr(args, "all", False) or len(names) != 1 or getattr(args, "attempts", 1) != 1:
        from smoldata_tui.commands.batch import run_batch

        return run_batch(args, out, err)
    try:
        spec = episode_spec(args, names[0])
    except (TaskError, EndpointError, UsageError) as exc:
        print(f"smoldata-tui run: {exc}", file=err)
        return 2
    if not args.headless:
        from smoldata_tui.ui.apps.live import run_live

        return run_live(spec)
    return run_headless(spec, out, err)


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


def run_headless(spec: EpisodeSpec, out: TextIO, err: TextIO) -> int:
    episode: Episode | None = None
    stopped: list[str] = []

    def stop(reason: str) -> None:
        stopped.append(reason)
        episode.cancel(reason)

    printer = HeadlessPrinter(out, err, on_closed=lambda: stop("stdout closed (broken pipe)"))
    episode = Episode(spec, printer)
    # A CI job cancelled, a closed terminal, Ctrl-C: stop the agent, still save and release everything.
    previous = {sig: signal.signal(sig, lambda *_, why=why: stop(why)) for sig, why in STOP_SIGNALS.items()}
    ended = threading.Event()
    watch_reader(out, lambda: stop("stdout closed (broken pipe)"), ended)
    try:
        result = episode.run()
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's cleanup ran
        print("smoldata-tui run: interrupted; the sandbox was released", file=err)
        return 130
    finally:
        ended.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    printer.finish()
    for record in result.divergences:
        print(f"[replay] diverged: {describe_divergence(record, limit=160)}", file=err, flush=True)
    summary = summary_json(result, printer)
    if summary["fork"] is not None:
        print(fork_line(summary["fork"]), file=err, flush=True)
    printer.print_line(json.dumps(summary, ensure_ascii=False))
    if result.error is not None:
        print(f"smoldata-tui run: {result.error}", file=err)
    if stopped:
        print(f"smoldata-tui run: stopped by {stopped[0]}; what was received is saved, the sandbox released", file=err)
        return 130 if stopped[0].startswith("SIGINT") else 1
    return result.exit_status
