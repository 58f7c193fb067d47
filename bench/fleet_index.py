"""How fast does a folder of 10,000 episodes open in the fleet table, and in how much memory?

    python bench/fleet_index.py [--episodes 10000] [--repeat 2]

Generates (once, into bench/.data/) a fleet of realistic small episodes (trace + run.meta.json,
smoldata_tui.fleet.build), then measures in separate processes, each best of N, with a fresh
cache directory for the cold runs:
  (a) the fleet index (smoldata_tui.fleet.index), cold: time to the first rows, to every row;
  (b) the same, reopened from its cache;
  (c) the fleet table itself (the real Textual app, headless): time until the table shows its
      first rows and every row, cold and reopened from the cache;
  (d) the seed's rule, transcribed literally (smoldata_tui.trace.seed_rule), over the same
      traces one after another in one process: the time a plain script needs to get only the
      verdicts, the baseline the ratios are against;
and the peak RSS of each run, all its processes together (workers included).
Targets: first rows <= 0.3 s and every row from the cache <= 1 s, counted from the moment the
table is on screen (Python's and Textual's own start-up come before it and are printed too);
"every row shown" is when the cached rows are all on screen, "every row" when the listing of the
folder has also confirmed each one (size and mtime of every trace and run.meta.json);
peak RSS <= 300 MB. CPU seconds are printed as well: on a machine shared with other work the
wall-clock numbers say how much of the CPUs the run was given as much as how fast it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, measure
from fleet_data import children_cpu, generated_fleet

INDEX = """
import json, sys, time
from smoldata_tui.fleet.index import FleetIndex
started = time.perf_counter()  # after the imports: the table's process has them already
first = []
count = [0]
def on_batch(batch):
    if not first:
        first.append(time.perf_counter() - started)
    count[0] += len(batch)
result = FleetIndex(sys.argv[1]).refresh(on_batch)
print(json.dumps({"first": first[0], "all": time.perf_counter() - started, "rows": count[0],
                  "analysed": result.analysed}))
"""

TABLE = """
import asyncio, json, sys, time
started = time.perf_counter()
from pathlib import Path
from smoldata_tui.ui.apps.viewer import ReplayApp
from smoldata_tui.ui.screens.fleet import FleetScreen

async def main():
    app = ReplayApp(Path(sys.argv[1]))
    app.animation_level = "none"
    first = mounted = shown = None
    async with app.run_test(size=(200, 50)) as pilot:
        while True:
            screen = app.screen
            if isinstance(screen, FleetScreen):
                if mounted is None:
                    mounted = time.perf_counter() - started
                rows = len(screen.table.rows)
                if rows and first is None:
                    first = time.perf_counter() - started
                if rows == int(sys.argv[2]) and shown is None:
                    shown = time.perf_counter() - started  # every row on screen (from the cache: not yet confirmed)
                if screen.last_refresh is not None and rows == int(sys.argv[2]):
                    break
            await asyncio.sleep(0.005)
        done = time.perf_counter() - started
        await pilot.press("q")
    print(json.dumps({"first": first, "all": done, "rows": rows, "mounted": mounted, "shown": shown}))

if __name__ == "__main__":
    asyncio.run(main())
"""

SEED = """
import sys
from pathlib import Path
from smoldata_tui.trace.seed_rule import seed_outcome
from smoldata_tui.store.metadata import is_trace_name
count = 0
for path in sorted(p for p in Path(sys.argv[1]).rglob("*.jsonl") if p.is_file() and is_trace_name(p.name)):
    with open(path, "rb") as handle:
        seed_outcome(handle.read())
    count += 1
print(count)
"""


def run(argv: list[str], cache: Path, *, cold: bool, repeat: int):
    """Best of ``repeat`` runs; a cold run starts from an empty cache directory."""
    best = None
    for _ in range(repeat):
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        before = os.times()
        measured = measure(argv, repeat=1)
        after = os.times()
        numbers = json.loads(measured.stdout.strip().splitlines()[-1])
        # CPU seconds of the run and every process it waited for: on a machine shared with other
        # work, the number that does not depend on how much of the CPUs this run was given.
        numbers["cpu"] = children_cpu(before, after)
        if best is None or numbers["all"] < best[0]["all"]:
            best = (numbers, measured)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    folder = generated_fleet("fleet_index", args.episodes, seed=20)
    size_mb = sum(p.stat().st_size for p in folder.rglob("*.jsonl")) / 1024 / 1024
    print(f"fleet: {args.episodes:,} episodes, {size_mb:.0f} MB of traces in {folder} "
          f"(ready in {time.perf_counter() - started:.0f} s)")  # fmt: skip
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    cache = Path(tempfile.mkdtemp(prefix="fleet-bench-cache-"))
    os.environ["XDG_CACHE_HOME"] = str(cache)
    os.environ["PYTHONPATH"] = str(ROOT)
    python = sys.executable
    try:
        index_argv = [python, "-c", INDEX, str(folder)]
        table_argv = [python, "-c", TABLE, str(folder), str(args.episodes)]
        results = {
            "(a) index, cold": run(index_argv, cache, cold=True, repeat=args.repeat),
            "(b) index, from the cache": run(index_argv, cache, cold=False, repeat=args.repeat),
            "(c) table, cold": run(table_argv, cache, cold=True, repeat=args.repeat),
            "(c) table, from the cache": run(table_argv, cache, cold=False, repeat=args.repeat),
        }
        seed = measure([python, "-c", SEED, str(folder)], repeat=args.repeat)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    assert int(seed.stdout) == args.episodes
    before = os.times()
    seed_cpu_run = measure([python, "-c", SEED, str(folder)], repeat=1)
    after = os.times()
    seed_cpu = children_cpu(before, after)
    print("times from the process's start; table rows also from the moment the table was on screen (mounted)")
    print(f"{'':28}{'first rows s':>13}{'after mount':>12}{'all rows s':>11}{'vs seed':>9}{'CPU s':>8}{'peak RSS MB':>12}")
    for name, (numbers, measured) in results.items():
        assert numbers["rows"] == args.episodes, numbers
        mounted = numbers.get("mounted")
        after_mount = f"{numbers['first'] - mounted:12.2f}" if mounted is not None else f"{'':12}"
        print(f"{name:28}{numbers['first']:13.2f}{after_mount}{numbers['all']:11.2f}"
              f"{seed.seconds / numbers['all']:8.2f}x{numbers['cpu']:8.2f}{measured.peak_tree_rss_mb:12.0f}")  # fmt: skip
    print(f"{'(d) seed rule, one process':28}{'':13}{'':12}{seed.seconds:11.2f}{'1.00x':>9}{seed_cpu:8.2f}"
          f"{seed.peak_tree_rss_mb:12.0f}")  # fmt: skip
    del seed_cpu_run
    print()
    table_cold, table_cached = results["(c) table, cold"][0], results["(c) table, from the cache"][0]
    checks = [
        # issue 27 item 3: first rows <= 0.5 s and every row <= 3 s cold (the earlier 0.3 s is kept)
        ("first rows, cold (table)", table_cold["first"] - table_cold["mounted"], 0.3, "s"),
        ("every row, cold (table)", table_cold["all"] - table_cold["mounted"], 3.0, "s"),
        # every row on screen, from the cache, before the listing has confirmed them
        ("reopen, every row shown", table_cached["shown"] - table_cached["mounted"], 1.0, "s"),
        # ... and every row confirmed by listing the folder (what a refresh costs)
        ("reopen, every row (table)", table_cached["all"] - table_cached["mounted"], 1.0, "s"),
        ("peak RSS (table, cold)", results["(c) table, cold"][1].peak_tree_rss_mb, 300, "MB"),
    ]
    for name, value, target, unit in checks:
        print(f"{name:28}{value:8.2f} {unit:3} (target <= {target:g} {unit}) {'OK' if value <= target else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
