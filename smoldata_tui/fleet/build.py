"""Folders of generated episodes (trace + ``run.meta.json``), for tests and benchmarks.

Each episode is a :func:`~smoldata_tui.trace.build_episode.realistic_episode`, most of them
healthy and some damaged the ways real fleets are (a repeated or missing callID, a run cut off
before any step finished, a truncated last line, a ``state: null`` that crashes the wrapper),
saved as the live runner saves one: ``DIR/<nnnnn>-<task>/run.jsonl`` and ``run.meta.json``.
Deterministic for a given seed. No Textual, no I/O beyond writing the folder.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

from smoldata_tui.store.metadata import EpisodeMetadata, Grade, format_time, metadata_path_for
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.build_episode import realistic_episode

TASKS = ("sales-top-region", "employees-median-salary", "inventory-restock", "churn-failed-payment")
MODELS = ("Qwen/Qwen3-8B", "openai/gpt-4.1-mini")
DEFECTS = ("repeated_id", "missing_id", "no_step_finish", "truncated", "state_null")
JAN_1_MS = 1767225600000


def episode_trace(rng: random.Random, number: int, *, defect: str | None, steps: int, output_bytes: int) -> bytes:
    """The bytes of one generated episode, damaged by ``defect`` (one of :data:`DEFECTS`)."""
    builder = TraceBuilder(session_id=f"ses_fleet{number:07d}", start_ms=JAN_1_MS + number * 60_000)
    realistic_episode(builder, steps=steps, rng=rng, output_bytes=output_bytes)
    calls = [event for event in builder.events if event["type"] == "tool_use"]
    if defect == "repeated_id" and len(calls) >= 2:
        calls[-1]["part"]["callID"] = calls[0]["part"]["callID"]
    elif defect == "missing_id" and calls:
        del calls[rng.randrange(len(calls))]["part"]["callID"]
    elif defect == "no_step_finish":
        builder.events[:] = [event for event in builder.events if event["type"] != "step_finish"]
    elif defect == "state_null" and calls:
        calls[rng.randrange(len(calls))]["part"]["state"] = None
    data = builder.dumps()
    if defect == "truncated":
        data = data[: len(data) - rng.randint(10, 60)]
    return data


def write_fleet(
    folder: Path,
    count: int,
    *,
    seed: int = 0,
    defect_rate: float = 0.15,
    with_metadata: float = 0.9,
    max_steps: int = 12,
    output_bytes: int = 1500,
) -> list[Path]:
    """Write ``count`` episodes under ``folder``; returns the traces' paths in sorted order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    traces = []
    for number in range(count):
        task = rng.choice(TASKS)
        defect = rng.choice(DEFECTS) if rng.random() < defect_rate else None
        episode = folder / f"{number:05d}-{task}"
        episode.mkdir(exist_ok=True)
        trace = episode / "run.jsonl"
        steps = rng.randint(2, max_steps)
        trace.write_bytes(episode_trace(rng, number, defect=defect, steps=steps, output_bytes=output_bytes))
        if rng.random() < with_metadata:
            # Not save_metadata: its fsync per file would make a 10,000-episode fleet take minutes.
            meta = _metadata(rng, number, task, defect).to_json()
            metadata_path_for(trace).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
        traces.append(trace)
    return traces


def _metadata(rng: random.Random, number: int, task: str, defect: str | None) -> EpisodeMetadata:
    from datetime import UTC, datetime, timedelta

    started = datetime.fromtimestamp(JAN_1_MS / 1000 + number * 60, UTC)
    status = "finished" if defect is None else rng.choice(("finished", "killed", "timeout"))
    graded = rng.random() < 0.95
    reward = 1.0 if rng.random() < 0.6 else 0.0
    return EpisodeMetadata(
        task=task,
        backend="local",
        model=rng.choice(MODELS),
        harness="builtin",
        opencode_version="1.18.31",
        started_at=format_time(started),
        finished_at=format_time(started + timedelta(seconds=rng.randint(20, 400))),
        status=status,
        exit_code=0 if status == "finished" else 137,
        grade=Grade(env_reward=reward, correctness=int(reward), grader_output=f'{{"correctness": {int(reward)}}}')
        if graded
        else None,
        timings={"agent": float(rng.randint(20, 400))},
        trace="run.jsonl",
    )
