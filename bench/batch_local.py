"""Does a batch run its episodes at once? A batch of 4 at concurrency 4 against four single runs.

    python bench/batch_local.py [--sleep S] [--task NAME]

Each episode is the real OpenCode in a local bubblewrap sandbox, answered by the replay model with
a recording whose one bash call sleeps S seconds (default 20) before the answer is written: agents
that wait on something, as agents mostly do. Baseline: four ``smoldata-tui run --headless``
processes one after another; batch: one ``smoldata-tui run --attempts 4 --concurrency 4
--headless``. Both with ``--no-capture`` (openenv's import would otherwise be paid once per single
run but once per batch). Prints both wall times and the ratio (target: ≤ 0.55× on 2 CPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def recording(folder: Path, sleep_s: float) -> Path:
    from smoldata_tui.trace.build import TraceBuilder

    builder = TraceBuilder()
    builder.step_start()
    builder.bash(f"sleep {sleep_s:g}", "")
    builder.tool("write", {"filePath": "/workdir/answer.txt", "content": "West\n"}, "Wrote file successfully.")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    path = folder / "sleepy.jsonl"
    path.write_bytes(builder.dumps())
    return path


def run(args: list[str], save: Path) -> tuple[float, dict]:
    command = [sys.executable, "-m", "smoldata_tui", "run", *args, "--headless", "--no-capture", "--save", str(save),
               "--timeout", "600"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", type=float, default=20.0)
    parser.add_argument("--task", default="sales-top-region")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smoldata-batch-bench-") as folder:
        folder = Path(folder)
        model = f"replay:{recording(folder, options.sleep)}"
        run(["--task", options.task, "--model", model], folder / "warm")  # first-use costs out of the way
        singles = []
        for attempt in range(4):
            elapsed, summary = run(["--task", options.task, "--model", model], folder / "single")
            singles.append(elapsed)
            print(f"single run {attempt + 1}: {elapsed:.1f} s, status {summary['status']}, "
                  f"env_reward {summary['grade']['env_reward']:g}")  # fmt: skip
        batch_s, summary = run(["--task", options.task, "--attempts", "4", "--concurrency", "4", "--model", model],
                               folder / "batch")  # fmt: skip
        totals = summary["tasks"][options.task]
        print(f"batch of 4 at concurrency 4: {batch_s:.1f} s, graded {totals['graded']}/4, passed {totals['passed']}")
    baseline = sum(singles)
    print(f"four single runs: {baseline:.1f} s; agents sleep {options.sleep:g} s each")
    print(f"ratio batch / four single runs: {batch_s / baseline:.2f}x (target <= 0.55x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
