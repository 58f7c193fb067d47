"""Shared by the benchmarks: the big generated trace and child-process measurement."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / ".data"
BIG_TRACE = DATA / "big_trace.jsonl"
MIN_BYTES = 150 * 1024 * 1024
MIN_EVENTS = 150_000


def big_trace() -> Path:
    """A ≥150 MB, ≥150,000-event realistic trace, generated once and reused."""
    if BIG_TRACE.exists() and BIG_TRACE.stat().st_size >= MIN_BYTES:
        return BIG_TRACE
    sys.path.insert(0, str(ROOT))
    from smoldata_tui.trace.build import TraceBuilder
    from smoldata_tui.trace.build_episode import realistic_episode

    DATA.mkdir(parents=True, exist_ok=True)
    partial = BIG_TRACE.with_suffix(".partial")
    # One long session, like an agent that worked for a very long time: a single sessionID and
    # unique callIDs, so the trace is healthy and the wrapper counts every call.
    builder = TraceBuilder()
    realistic_episode(builder, steps=42_000, rng=random.Random(20261202), output_bytes=1300)
    with partial.open("wb") as out:
        out.write(builder.drain())
    partial.replace(BIG_TRACE)
    return BIG_TRACE


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    stdout: str


def measure(argv: list[str], *, repeat: int = 3) -> Measured:
    """Run a child process ``repeat`` times; the fastest wall time and its peak RSS (from wait4)."""
    best: Measured | None = None
    for _ in range(repeat):
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        out = child.stdout.read()
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode not in (0, 1):
            raise SystemExit(f"{argv} failed ({child.returncode}): {err.decode()[-2000:]}")
        run = Measured(elapsed, usage.ru_maxrss / 1024, out.decode(errors="replace"))
        if best is None or run.seconds < best.seconds:
            best = run
    assert best is not None
    return best
