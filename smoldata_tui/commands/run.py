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
import signal
import sys
import threading
from typing import TextIO

from smoldata_tui.commands.episode_args import UsageError, check_counts, episode_spec, prepare_fork
from smoldata_tui.commands.fork import fork_line
from smoldata_tui.commands.headless import STOP_SIGNALS, HeadlessPrinter, summary_json, watch_reader
from smoldata_tui.replay.divergence import describe_divergence
from smoldata_tui.replay.model_endpoint import EndpointError
from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.tasks import TaskError


def run_live_or_headless(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        check_counts(args)
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
