"""How fast is `smoldata-tui check` on a big trace, against the seed's rule and a bare orjson loop?

    python bench/check_speed.py [--repeat N]

Generates (once, into bench/.data/) a realistic trace of at least 150 MB and 150,000 events, then
times in separate processes, each best of N:
  (a) `smoldata-tui check --json --no-cache` on it, the whole CLI;
  (b) the seed's rule, transcribed literally (smoldata_tui.trace.seed_rule), on the same bytes;
  (c) a bare loop of orjson.loads over the file's lines: the floor for any JSON-reading tool.
Targets (issue 27, wall clock, 2 CPUs, the rule and the floor measured in the same run): (a) at
least 5x faster than (b) and at most 1.5x the time of (c); the peak RSS of check's largest process
(itself or a worker) at most 150 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import big_trace, measure
from fleet_data import cpu_seconds

SEED = """
import sys
from smoldata_tui.trace.seed_rule import seed_outcome
with open(sys.argv[1], "rb") as handle:
    outcome = seed_outcome(handle.read())
print(outcome.calls)
"""

BARE_ORJSON = """
import sys, orjson
count = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        orjson.loads(line)
        count += 1
print(count)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trace = big_trace()
    size_mb = trace.stat().st_size / 1024 / 1024
    print(f"machine: {os.cpu_count()} CPUs (check uses them all for a file this size), load average "
          f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    python = sys.executable

    # --no-cache: a result kept by an earlier run (the trace is an hour old) would be served in 0.1 s
    commands = {
        "check": [python, "-m", "smoldata_tui", "check", "--json", "--no-cache", str(trace)],
        "seed": [python, "-c", SEED, str(trace)],
        "bare": [python, "-c", BARE_ORJSON, str(trace)],
    }
    check, seed, bare = (measure(commands[name], repeat=args.repeat) for name in ("check", "seed", "bare"))
    result = json.loads(check.stdout)
    cpu = {name: min(cpu_seconds(argv) for _ in range(args.repeat)) for name, argv in commands.items()}  # user + sys

    events = result["events"]
    assert str(result["native_tool_calls"]) == seed.stdout.strip(), "the verdicts differ"
    print(
        f"trace: {trace.name} — {size_mb:.0f} MB, {events:,} events ({trace.stat().st_size / events / 1024:.1f} KB "
        f"per event), native_tool_calls = {result['native_tool_calls']}"
    )
    print(f"{'':28}{'seconds':>9}{'CPU s':>8}{'MB/s':>9}{'RSS MB: largest':>16}{'all':>6}{'vs seed':>9}{'vs floor':>10}")
    for name, run, used in (("(a) smoldata-tui check", check, cpu["check"]), ("(b) seed rule, literal", seed, cpu["seed"]),
                            ("(c) bare orjson loop", bare, cpu["bare"])):  # fmt: skip
        print(f"{name:28}{run.seconds:9.2f}{used:8.2f}{size_mb / run.seconds:9.0f}{run.peak_rss_mb:16.0f}{run.peak_tree_rss_mb:6.0f}"
              f"{seed.seconds / run.seconds:8.2f}x{run.seconds / bare.seconds:9.2f}x")  # fmt: skip
    print()
    speedup = seed.seconds / check.seconds
    overhead = check.seconds / bare.seconds
    print(f"check vs seed rule:     {speedup:5.2f}x faster   (target >= 5x)   {'OK' if speedup >= 5 else 'MISSED'}")
    print(f"check vs bare orjson:   {overhead:5.2f}x the time (target <= 1.5x) {'OK' if overhead <= 1.5 else 'MISSED'}")
    peak = check.peak_rss_mb
    print(f"check peak RSS:         {peak:5.0f} MB       (target <= 150 MB, its largest process) {'OK' if peak <= 150 else 'MISSED'}"
          f"; all its processes together {check.peak_tree_rss_mb:.0f} MB")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
