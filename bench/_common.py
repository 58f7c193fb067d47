"""Shared by the benchmarks: the big generated trace and child-process measurement."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / ".data"
BIG_TRACE = DATA / f"big_trace_{os.environ.get('SMOLDATA_BENCH_OUTPUT_BYTES', '3000')}.jsonl"
MIN_BYTES = 150 * 1024 * 1024
MIN_EVENTS = 150_000
# Tool outputs of a data-analysis agent: CSV reads and pandas prints of a few KB, bash outputs
# repeated in metadata.output as OpenCode does. Set SMOLDATA_BENCH_OUTPUT_BYTES to try others.
OUTPUT_BYTES = int(os.environ.get("SMOLDATA_BENCH_OUTPUT_BYTES", "3000"))


def big_trace() -> Path:
    """A ≥150 MB, ≥150,000-event realistic trace, generated once and reused.

    Generated in a child process: a child forked from a process that held the whole trace
    in memory would report that memory as its own peak RSS.
    """
    if not (BIG_TRACE.exists() and BIG_TRACE.stat().st_size >= MIN_BYTES):
        code = "import sys; sys.path.insert(0, sys.argv[1]); import _common; _common._generate()"
        subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parent)], check=True)
    return BIG_TRACE


def _generate() -> None:
    sys.path.insert(0, str(ROOT))
    from smoldata_tui.trace.build import TraceBuilder
    from smoldata_tui.trace.build_episode import realistic_episode

    DATA.mkdir(parents=True, exist_ok=True)
    partial = BIG_TRACE.with_suffix(".partial")
    # One long session, like an agent that worked for a very long time: a single sessionID and
    # unique callIDs, so the trace is healthy and the wrapper counts every call.
    builder = TraceBuilder()
    realistic_episode(builder, steps=42_000, rng=random.Random(20261202), output_bytes=OUTPUT_BYTES)
    with partial.open("wb") as out:
        out.write(builder.drain())
    partial.replace(BIG_TRACE)


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float  # the largest RSS of any one process: the main one or a child it waited for (wait4)
    peak_tree_rss_mb: float  # the largest sum of RSS over the process and its children (sampled)
    stdout: str


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every descendant, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * _PAGE
        except OSError:
            pass
        todo += children.get(pid, [])
    return total


def measure(argv: list[str], *, repeat: int = 3, env: dict[str, str] | None = None, before_each=None) -> Measured:
    """Run a child process ``repeat`` times; the fastest wall time, with its memory peaks.
    ``env``: variables set for the child; ``before_each()`` runs before each run, untimed."""
    best: Measured | None = None
    for _ in range(repeat):
        if before_each is not None:
            before_each()
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                 env={**os.environ, **(env or {})})  # fmt: skip
        peak = [0]
        done = threading.Event()

        def sample(pid: int = child.pid) -> None:
            # Every 20 ms: often enough for runs of a second, rarely enough not to slow them.
            while not done.wait(0.02):
                peak[0] = max(peak[0], _tree_rss(pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out = child.stdout.read()
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        done.set()
        sampler.join()
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"{argv} failed ({code}): {err.decode()[-2000:]}")
        run = Measured(elapsed, usage.ru_maxrss / 1024, max(peak[0], usage.ru_maxrss * 1024) / 1024 / 1024,
                       out.decode(errors="replace"))
        if best is None or run.seconds < best.seconds:
            best = run
    assert best is not None
    return best


def bash_steps_recording(folder: Path, steps: int, command: str, output: str) -> Path:
    """A recording for the replay model: ``steps`` bash calls (``{step}`` in ``command`` and
    ``output`` is the step's number), then a final text answer."""
    from smoldata_tui.trace.build import TraceBuilder

    builder = TraceBuilder()
    for step in range(steps):
        builder.step_start()
        builder.bash(command.format(step=step), output.format(step=step))
        builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    path = folder / "steps.jsonl"
    path.write_bytes(builder.dumps())
    return path


@contextlib.contextmanager
def local_daytona_server(folder: Path):
    """The local server that speaks Daytona's API (tests/daytona_local), with this process's
    environment pointing the real SDK at it; stopped (every sandbox killed) on the way out."""
    from smoldata_tui.opencode.install import ensure_opencode
    from tests.daytona_local import LocalDaytona

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    server = LocalDaytona(opencode_bin_dir=ensure_opencode().parent, sandbox_base_dir=folder / "sandboxes").start()
    os.environ.update(DAYTONA_API_URL=server.api_url, DAYTONA_API_KEY=server.api_key, DAYTONA_TARGET="local")
    try:
        yield server
    finally:
        server.stop()
