"""``smoldata-tui run`` with several tasks, ``--all`` or ``--attempts K``: a batch.

Headless: one stdout line per episode as it starts and as it ends, then one JSON line with
``episodes``, ``wall_s``, ``tasks`` (name → ``attempts``, ``graded``, ``passed``, ``pass_at``,
``verdicts``), ``failed`` (episodes not graded, with why) and ``batch`` (the folder). Exit 0 when
every episode was graded (whatever its reward), 1 otherwise, 2 for usage errors; SIGTERM, SIGHUP,
SIGINT (exit 130) and a closed stdout cancel every episode, each saving what it received and
releasing its sandbox.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import TextIO

from smoldata_tui.commands.episode_args import (
    UsageError,
    _check_save_dir,
    check_counts,
    check_text_options,
    episode_spec,
    find_task,
    open_model_endpoint,
)
from smoldata_tui.commands.headless import STOP_SIGNALS, HeadlessPrinter, watch_reader
from smoldata_tui.session.batch import Batch, BatchPlan, EpisodeRun
from smoldata_tui.replay.model_endpoint import EndpointError
from smoldata_tui.tasks import TaskError, default_task_root
from smoldata_tui.tasks.load import load_task_set
from smoldata_tui.trace.text import clip

# Daytona runs sandboxes remotely: the host only follows logs and grades, so more run at once than
# it has CPUs. 16 keeps the create and toolbox calls of a batch well inside Daytona's rate limits;
# a 429 still backs every episode off together (sandbox/daytona/retry.py).
DAYTONA_CONCURRENCY = 16


def default_concurrency(backend: str) -> int:
    return DAYTONA_CONCURRENCY if backend == "daytona" else max(1, os.cpu_count() or 1)


def batch_plan(args) -> BatchPlan:
    """The batch the arguments describe; raises TaskError, EndpointError or UsageError before any
    sandbox exists."""
    check_text_options(args)
    names = list(args.task or [])
    if args.all and names:
        raise UsageError("--all runs every task of the set: do not also name tasks with --task")
    if not args.all and not names:
        raise UsageError("which task? pass --task NAME (repeat it for several) or --all")
    check_counts(args)
    concurrency = args.concurrency if args.concurrency is not None else default_concurrency(args.backend)
    if args.all:
        tasks = load_task_set(args.tasks or default_task_root())
        if not tasks:
            raise UsageError(f"no tasks in {args.tasks or default_task_root()}")
    else:
        if len(set(names)) != len(names):
            raise UsageError("a task is named twice: use --attempts K for several episodes of one task")
        tasks = [find_task(name, args.tasks) for name in names]
    _check_save_dir(args.save)
    template = episode_spec(args, tasks[0].name)  # checks the backend, harness and endpoint once
    template.endpoint.close()

    def fresh_endpoint():
        return open_model_endpoint(args)

    return BatchPlan(tasks=tasks, attempts=args.attempts, concurrency=concurrency, template=template,
                     open_endpoint=fresh_endpoint)  # fmt: skip


class HeadlessBatchPrinter:
    """One line per episode start and end, from the episodes' threads, never interleaved."""

    def __init__(self, out: TextIO, on_closed) -> None:
        self._printer = HeadlessPrinter(out, out, on_closed=on_closed)
        self._lock = threading.Lock()

    def episode_started(self, run: EpisodeRun) -> None:
        self.print_line(f"[start] {run.key}")

    def episode_ended(self, run: EpisodeRun) -> None:
        outcome = run.outcome
        reward = "not graded" if outcome.env_reward is None else f"env_reward={outcome.env_reward:g}"
        parts = [f"[end] {run.key}", outcome.status or "?", reward, f"verdict={outcome.verdict or '-'}",
                 f"{outcome.wall_s or 0:.1f}s"]  # fmt: skip
        if outcome.why:
            parts.append(f"({outcome.why})")
        self.print_line(clip(" ".join(parts), 400))

    def print_line(self, line: str) -> None:
        with self._lock:  # the single run's printer: a closed reader stops the batch once
            self._printer.print_line(line)


def run_batch(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        plan = batch_plan(args)
    except (TaskError, EndpointError, UsageError) as exc:
        print(f"smoldata-tui run: {exc}", file=err)
        return 2
    if not args.headless:
        from smoldata_tui.ui.apps.batch import run_batch_live

        return run_batch_live(plan)
    return run_batch_headless(plan, out, err)


def run_batch_headless(plan: BatchPlan, out: TextIO, err: TextIO) -> int:
    stopped: list[str] = []
    batch: Batch | None = None

    def stop(reason: str) -> None:
        stopped.append(reason)
        if batch is not None:
            batch.cancel_all(reason)

    printer = HeadlessBatchPrinter(out, on_closed=lambda: stop("stdout closed (broken pipe)"))
    batch = Batch(plan, printer)
    episodes = len(batch.runs)
    print(f"[batch] {episodes} episode{'s' if episodes != 1 else ''}, {plan.concurrency} at once, saving to "
          f"{batch.folder}", file=err, flush=True)  # fmt: skip
    previous = {sig: signal.signal(sig, lambda *_, why=why: stop(why)) for sig, why in STOP_SIGNALS.items()}
    ended = threading.Event()
    watch_reader(out, lambda: stop("stdout closed (broken pipe)"), ended)
    try:
        report = batch.run()
    finally:
        ended.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    printer.print_line(json.dumps({**report, "batch": str(batch.folder)}, ensure_ascii=False))
    if stopped:
        print(f"smoldata-tui run: stopped by {stopped[0]}; what was received is saved, every sandbox released", file=err)
        return 130 if stopped[0].startswith("SIGINT") else 1
    return 0 if not report["failed"] else 1
