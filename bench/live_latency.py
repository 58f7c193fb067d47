"""How long from OpenCode writing an event to its row on the live screen?

    python bench/live_latency.py [--steps N] [--backend local|daytona] [--no-baseline]

Runs a real live episode: the real OpenCode 1.18.31 in a bubblewrap sandbox on the sample task
``sales-top-region``, answered by the replay model with a scripted recording of N quick bash
steps, inside the real Textual app (headless, driven by Pilot), with the model traffic through
openenv's capture proxy (the default path); then, as the baseline in the same run, the same
episode with ``--no-capture`` (OpenCode straight to the replay model). Every 2 ms the bench notes when
each new row reached the timeline; the event's own ``timestamp`` (OpenCode's clock, taken when it
wrote the event) gives the start. Prints median, p95 and worst latency. Target: p95 < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import bash_steps_recording, local_daytona_server  # noqa: E402
from smoldata_tui.session.episode import EpisodeSpec  # noqa: E402
from smoldata_tui.replay.model_endpoint import open_endpoint  # noqa: E402
from smoldata_tui.tasks import default_task_root, load_task  # noqa: E402
from smoldata_tui.ui.apps.live import LiveApp  # noqa: E402
from smoldata_tui.ui.screens.episode import EpisodeScreen  # noqa: E402
from smoldata_tui.ui.screens.live import LiveScreen  # noqa: E402


async def measure(steps: int, folder: Path, backend: str, capture: bool) -> tuple[list[float], object]:
    record = bash_steps_recording(folder, steps, "echo step {step}", "step {step}\n")
    spec = EpisodeSpec(
        task=load_task(default_task_root() / "sales-top-region"),
        endpoint=open_endpoint(model=f"replay:{record}"),
        timeout_s=300,
        save_dir=folder / "runs",
        backend=backend,
        capture=capture,
    )
    app = LiveApp(spec)
    arrivals: list[float] = []  # wall-clock ms when row i appeared
    async with app.run_test(size=(160, 45)) as pilot:
        live = next(s for s in app.screen_stack if isinstance(s, LiveScreen))
        while live.running:
            screen = next((s for s in app.screen_stack if isinstance(s, EpisodeScreen)), None)
            if screen is not None:
                now = time.time() * 1000
                while len(arrivals) < screen.model.count:
                    arrivals.append(now)
            await asyncio.sleep(0.002)
        await pilot.pause(0.3)
    result = live.result
    stamps = [orjson.loads(line)["timestamp"] for line in result.trace_path.read_bytes().splitlines() if line.strip()]
    return [arrival - stamp for arrival, stamp in zip(arrivals, stamps)], result


def _p95(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _report(label: str, latencies: list[float], result) -> None:
    capture = orjson.loads(result.metadata_path.read_bytes()).get("capture") or {}
    print(f"{label}: {result.status}, env_reward {result.grade.env_reward if result.grade else None}, "
          f"capture level {capture.get('level', '-')}, training turns {capture.get('training_turns', '-')}")  # fmt: skip
    p95 = _p95(latencies)
    print(f"  event written → row on screen: median {statistics.median(latencies):.0f} ms, "
          f"p95 {p95:.0f} ms, worst {max(latencies):.0f} ms over {len(latencies)} events   "
          f"(target p95 < 100 ms) {'OK' if p95 < 100 else 'MISSED'}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--backend", choices=["local", "daytona"], default="local",
                        help="daytona: through the real SDK and the local Daytona server (tests/daytona_local)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the --no-capture episode")
    args = parser.parse_args()
    print("load average at start (1/5/15 min): {:.2f} {:.2f} {:.2f} on {} CPUs".format(*os.getloadavg(), os.cpu_count()))
    runs = {}
    for capture in (True,) if args.no_baseline else (True, False):
        with tempfile.TemporaryDirectory(prefix="smoldata-latency-") as folder, contextlib.ExitStack() as stack:
            if args.backend == "daytona":
                stack.enter_context(local_daytona_server(Path(folder)))
            latencies, result = asyncio.run(measure(args.steps, Path(folder), args.backend, capture))
            if not latencies:
                print("no rows reached the screen")
                return 1
            runs[capture] = latencies
            _report("through the capture proxy" if capture else "baseline, --no-capture", latencies, result)
    if args.backend == "local":
        print("(OpenCode writes the events; the runner polls the log every 20 ms and wakes the timeline, which")
        print(" draws new rows at most every 50 ms)")
    else:
        print("(the follower's request waits in the sandbox and looks at the log every 50 ms; then HTTP through")
        print(" the SDK, and the timeline's redraw)")
    if False in runs:
        print(f"p95 with the proxy / without: {_p95(runs[True]) / max(_p95(runs[False]), 1e-9):.2f}×")
    print("load average at end (1/5/15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
