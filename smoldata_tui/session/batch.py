"""Many episodes at once: one :class:`Episode` per (task, attempt), at most ``concurrency`` running,
each in its own sandbox, its own save folder ``<save>/<batch>/<task>-<attempt>/``, its own model
endpoint object (a replay model is one server per episode) and its own secret scrubber (the
Episode's). ``batch.json`` in the batch folder is rewritten atomically as episodes start and end.

An episode that fails is recorded with why and never stops the others. :meth:`Batch.cancel`
stops one episode, :meth:`Batch.cancel_all` every one (queued ones never start); each Episode
releases its sandbox on every path, so the batch does too. Blocking by design, like Episode:
the CLI and the grid call :meth:`Batch.run` from one thread and cancel from another.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from smoldata_tui.episode.findings import episode_findings
from smoldata_tui.store.batch_summary import EpisodeOutcome, summary, verdict_kind, write_batch_file
from smoldata_tui.session.episode import Episode, EpisodeObserver, EpisodeSpec, new_run_dir, now_utc
from smoldata_tui.replay.model_endpoint import ModelEndpoint
from smoldata_tui.masking import SecretScrubber
from smoldata_tui.tasks import Task
from smoldata_tui.trace import TraceAnalysis
from smoldata_tui.trace.text import clip


class BatchObserver(Protocol):
    """Called from the episodes' worker threads."""

    def episode_started(self, run: EpisodeRun) -> None: ...

    def episode_ended(self, run: EpisodeRun) -> None: ...


class EpisodeRun:
    """One episode of the batch: its outcome, its progress for a grid row, and the observers
    following it (a live screen). It is the Episode's observer; reads from other threads are
    safe (the analysis is fed and read under a lock)."""

    def __init__(self, outcome: EpisodeOutcome) -> None:
        self.outcome = outcome
        self.stage_name = ""
        self.stage_state = ""
        self.started_at: float | None = None  # monotonic
        self.ended_at: float | None = None
        self.trace_path: Path | None = None
        self.episode: Episode | None = None
        self.cancelled = False
        self._listeners: list[EpisodeObserver] = []
        self._lock = threading.Lock()
        self._last_tool: str | None = None
        # No event records kept: a batch may hold hundreds of episodes; the grid needs the last tool only.
        self._analysis = TraceAnalysis(on_event=self._see_event)
        self.final_findings: int | None = None  # once ended: the stream's findings and the episode's (as check counts them)
        self._stages: list[tuple[str, str, float, str]] = []  # replayed to a listener that joins late

    @property
    def key(self) -> str:
        return self.outcome.key

    def reset(self) -> None:
        """Queued again (a requeued attempt): what the last try saw is forgotten, its listeners kept."""
        with self._lock:
            self.outcome = EpisodeOutcome(self.outcome.task, self.outcome.attempt)
            self.stage_name = self.stage_state = ""
            self.started_at = self.ended_at = None
            self.trace_path = None
            self.episode = None
            self.cancelled = False
            self._last_tool = None
            self._analysis = TraceAnalysis(on_event=self._see_event)
            self.final_findings = None
            self._stages = []

    # --- EpisodeObserver ----------------------------------------------------------------------
    def opened(self, trace_path: Path) -> None:
        self.trace_path = trace_path
        for listener in self._snapshot_listeners():
            listener.opened(trace_path)

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        with self._lock:
            self.stage_name, self.stage_state = name, state
            self._stages.append((name, state, elapsed_s, message))
            listeners = list(self._listeners)
        for listener in listeners:
            listener.stage(name, state, elapsed_s, message)

    def received(self, data: bytes) -> None:
        with self._lock:
            self._analysis.feed(data)
            listeners = list(self._listeners)
        for listener in listeners:
            listener.received(data)

    def _see_event(self, event: object, *_where: int) -> None:
        if isinstance(event, dict) and event.get("type") == "tool_use" and isinstance(event.get("part"), dict):
            tool = event["part"].get("tool")
            if isinstance(tool, str):
                self._last_tool = tool

    # --- following ----------------------------------------------------------------------------
    def follow(self, listener: EpisodeObserver) -> None:
        """Add a listener; it is told the trace path and the stages so far (the trace's bytes it
        reads from the file itself)."""
        with self._lock:
            self._listeners.append(listener)
            stages = list(self._stages)
        if self.trace_path is not None:
            listener.opened(self.trace_path)
        for stage in stages:
            listener.stage(*stage)

    def unfollow(self, listener: EpisodeObserver) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _snapshot_listeners(self) -> list[EpisodeObserver]:
        with self._lock:
            return list(self._listeners)

    # --- a grid row ---------------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float | None:
        if self.started_at is None:
            return None
        return (self.ended_at or time.monotonic()) - self.started_at

    def progress(self) -> dict:
        """steps, calls, last tool, findings, the verdict if the trace ended now."""
        with self._lock:
            stats = self._analysis.stats
            last_tool = self._last_tool
            return {
                "steps": stats.steps,
                "calls": sum(stats.calls_by_tool.values()),
                "last_tool": last_tool,
                "findings": self.final_findings if self.final_findings is not None else len(self._analysis.findings),
                "verdict": verdict_kind(self._analysis.verdict()) if self._analysis.event_count else None,
            }

    def finish_analysis(self):
        with self._lock:
            return self._analysis.finish()


@dataclasses.dataclass
class BatchPlan:
    tasks: list[Task]
    attempts: int
    concurrency: int
    template: EpisodeSpec  # backend, timeout, OpenCode, harness...: task, endpoint and folders are per episode
    open_endpoint: Callable[[], ModelEndpoint]  # a fresh endpoint object per episode (closed by the Episode)


REQUEUEABLE = frozenset({"error", "cancelled", "timeout", "killed"})
REQUEUED_DIR = ".requeued"  # a requeued attempt's earlier tries, kept out of the fleet (hidden)


class Batch:
    def __init__(self, plan: BatchPlan, observer: BatchObserver | None = None) -> None:
        if plan.attempts < 1 or plan.concurrency < 1 or not plan.tasks:
            raise ValueError("a batch needs at least one task, one attempt and a concurrency of one")
        self.plan = plan
        self.observer = observer
        self.folder = new_run_dir(Path(plan.template.save_dir), "batch")
        self.runs = [EpisodeRun(EpisodeOutcome(task.name, attempt))
                     for task in plan.tasks for attempt in range(1, plan.attempts + 1)]  # fmt: skip
        self._tasks = {run.key: task for task in plan.tasks for run in self.runs if run.outcome.task == task.name}
        self._stop_reason: str | None = None
        self._lock = threading.Lock()
        # The scheduler: runs wait in ``_queue`` (attempt order); at most ``_limit`` run at once,
        # each on one of ``_workers`` threads. ``set_concurrency`` and ``requeue`` act while it runs.
        self._slots = threading.Condition()
        self._queue: collections.deque[EpisodeRun] = collections.deque(self.runs)
        self._limit = plan.concurrency
        self._active = 0
        self._workers = 0
        self._begun = False  # run() was called: workers may start
        self._finished = False
        self._requeued: dict[str, int] = {}  # run key -> how many times it was run again
        self._started_at = now_utc()
        self._clock = time.monotonic()
        self.wall_s: float | None = None
        self._save()

    # --- control ------------------------------------------------------------------------------
    def cancel(self, key: str, reason: str = "cancelled") -> None:
        """Stop one episode (a queued one never starts, and ends now)."""
        for run in self.runs:
            if run.key == key:
                with self._lock:
                    run.cancelled = True
                    episode = run.episode
                if episode is not None:
                    episode.cancel(reason)
                with self._slots:
                    queued = run in self._queue
                    if queued:
                        self._queue.remove(run)
                if queued:
                    self._skip(run)

    @property
    def concurrency(self) -> int:
        return self._limit

    def set_concurrency(self, limit: int) -> None:
        """At most ``limit`` episodes at once from now on: more start at once when it grows; when it
        shrinks, running ones go on and no new one starts until fewer run."""
        if limit < 1:
            raise ValueError("the concurrency is at least 1")
        with self._slots:
            self._limit = limit
            self._slots.notify_all()
        self._ensure_workers()
        self._save()

    def requeue(self, key: str) -> str | None:
        """Run an attempt that ended in error, was cancelled, timed out or was killed again. Its last
        try's folder is kept under ``.requeued/`` (hidden: the fleet and the groups count the attempt
        once). None when queued, else why not. After the batch has ended, the attempt waits for
        :meth:`run` to be called again, which runs it and saves the batch's end anew."""
        run = next((candidate for candidate in self.runs if candidate.key == key), None)
        if run is None:
            return f"no episode {key} in this batch"
        with self._slots:
            if self._stop_reason is not None and not self._finished:
                return "the batch is being cancelled"
            outcome = run.outcome
            if outcome.state != "ended":
                return f"{key} has not ended"
            if outcome.status not in REQUEUEABLE:
                return f"{key} {outcome.status or 'ended'}: only an attempt that errored, was cancelled, timed out or was killed runs again"
            if self._finished:  # its runner is gone: the next run() starts the workers and waits for them
                self._finished = self._begun = False
                with self._lock:
                    self._stop_reason = None  # a cancel of every episode ended the last run, not this one
                self.wall_s = None
            tries = self._requeued.get(key, 0) + 1
            previous = self.folder / key
            if previous.is_dir():
                keep = self.folder / REQUEUED_DIR / f"{key}-try{tries}"
                keep.parent.mkdir(exist_ok=True)
                previous.rename(keep)
            self._requeued[key] = tries
            run.reset()
            self._queue.append(run)
            self._slots.notify_all()
        self._ensure_workers()
        self._save()
        return None

    def cancel_all(self, reason: str = "cancelled") -> None:
        with self._lock:
            self._stop_reason = self._stop_reason or reason
        for run in self.runs:
            self.cancel(run.key, reason)

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason

    # --- the run ------------------------------------------------------------------------------
    def run(self) -> dict:
        """Run every episode (and every attempt requeued meanwhile); returns the summary (also
        saved as batch.json)."""
        with self._slots:
            self._begun = True
        self._ensure_workers()
        # Waiting in short steps keeps the calling (main) thread free to take signals.
        while True:
            with self._slots:
                if not self._queue and self._active == 0 and self._workers == 0:
                    self._finished = True  # under the lock: a requeue now is refused, never lost
                    break
            time.sleep(0.1)
        self.wall_s = time.monotonic() - self._clock
        self._save(final=True)
        return self.summary()

    def _ensure_workers(self) -> None:
        with self._slots:
            wanted = min(self._limit, len(self._queue) + self._active) - self._workers
            if not self._begun or self._finished or wanted <= 0:
                return
            self._workers += wanted
        for _ in range(wanted):
            threading.Thread(target=self._work, name="batch-episode", daemon=True).start()

    def _work(self) -> None:
        """One worker: the next queued run whenever fewer than the limit run; gone when the queue is
        empty, or when there are more workers than the limit."""
        while True:
            with self._slots:
                while True:
                    if not self._queue or self._workers > self._limit:
                        self._workers -= 1
                        self._slots.notify_all()
                        return
                    if self._active < self._limit:
                        break
                    self._slots.wait(0.5)
                run = self._queue.popleft()
                self._active += 1
            try:
                self._run_one(run)
            finally:
                with self._slots:
                    self._active -= 1
                    self._slots.notify_all()

    def _skip(self, run: EpisodeRun) -> None:
        with self._lock:
            run.outcome.state = "running"
            run.started_at = time.monotonic()
        self._end(run, status="cancelled", why=f"cancelled before it started ({self._stop_reason or 'cancelled'})")

    def summary(self) -> dict:
        wall = self.wall_s if self.wall_s is not None else time.monotonic() - self._clock
        return summary([run.outcome for run in self.runs], wall)

    def _run_one(self, run: EpisodeRun) -> None:
        outcome = run.outcome
        with self._lock:
            skip = run.cancelled
            outcome.state = "running"
            run.started_at = time.monotonic()
            outcome.folder = run.key  # its folder (run_name) named as it starts: the groups' batch order
        if skip:
            self._end(run, status="cancelled", why=f"cancelled before it started ({self._stop_reason or 'cancelled'})")
            return
        self._save()
        if self.observer is not None:
            self.observer.episode_started(run)
        scrub = None
        try:
            endpoint = self.plan.open_endpoint()
            scrub = SecretScrubber(endpoint.secrets).text
            spec = dataclasses.replace(self.plan.template, task=self._tasks[run.key], endpoint=endpoint,
                                       save_dir=self.folder, run_name=run.key)  # fmt: skip
            # (a requeued attempt's last folder was moved aside: the same name is free again)
            episode = Episode(spec, run)
            with self._lock:
                run.episode = episode
                cancelled = run.cancelled
            if cancelled:
                episode.cancel(self._stop_reason or "cancelled")
            result = episode.run()
        except Exception as exc:  # noqa: BLE001 - one episode's failure never stops the others
            message = f"{type(exc).__name__}: {exc}"
            self._end(run, status="error", why=clip(scrub(message) if scrub else message, 500))
            return
        report = run.finish_analysis()
        if report.bytes:  # an episode that failed before its agent ran has no trace to judge
            outcome.verdict = verdict_kind(report.verdict)
            outcome.native_tool_calls = report.verdict.native_tool_calls
        if result.trace_path is not None and result.trace_path.is_file():
            # what check, the fleet row and the viewer add to the stream's findings, from the files just saved
            extra = episode_findings(result.trace_path, report.findings, report.stats.calls_by_tool, result.metadata)
            run.final_findings = len(report.findings) + len(extra)
        why = None
        if not result.graded:
            if result.error is not None:
                why = str(result.error)
            elif result.grade is not None and result.grade.grader_error:
                why = f"grader: {result.grade.grader_error}"
            else:
                why = result.status
        self._end(run, status=result.status, why=why, reward=result.grade.env_reward if result.graded else None,
                  folder=result.trace_path.parent)  # fmt: skip

    def _end(self, run: EpisodeRun, *, status: str, why: str | None, reward: float | None = None,
             folder: Path | None = None) -> None:  # fmt: skip
        outcome = run.outcome
        with self._lock:
            run.ended_at = time.monotonic()
            outcome.state, outcome.status, outcome.why, outcome.env_reward = "ended", status, why, reward
            outcome.wall_s = round(run.elapsed_s or 0.0, 3)
            existing = folder or self.folder / run.key
            outcome.folder = run.key if existing.is_dir() else None
        self._save()
        if self.observer is not None:
            self.observer.episode_ended(run)

    def _save(self, final: bool = False) -> None:
        template = self.plan.template
        with self._lock:
            document = {
                "batch": self.folder.name,
                "started_at": self._started_at,
                "finished_at": now_utc() if final else None,
                "backend": template.backend,
                "harness": template.harness,
                "model": template.endpoint.label,
                "attempts": self.plan.attempts,
                "concurrency": self._limit,
                "requeued": dict(self._requeued),
                "stop_reason": self._stop_reason,
                **self.summary(),
                "runs": [run.outcome.to_json() for run in self.runs],
            }
            write_batch_file(self.folder, document)
