"""Is `smoldata-tui check --json DIR` over many small traces faster than the seed's rule in one process?

    python bench/fleet_check.py [--traces 2000] [--repeat 3]

Generates (once, into bench/.data/) a fleet of realistic small episodes (smoldata_tui.fleet.build:
data-analysis runs of 2-12 steps, about 22 KB each, 15 % damaged the ways real fleets are, most
with a run.meta.json), then times in separate processes, each best of N:
  (a) `smoldata-tui check --json DIR`: the whole CLI, on every CPU;
  (b) the seed's rule, transcribed literally (smoldata_tui.trace.seed_rule), over the same files,
      one after another in one process (read each file, run the rule);
and checks that both give every trace the same native_tool_calls.
Target: (a) at least 1.8x faster than (b) on 2 CPUs. The CPU seconds (user + sys, all processes)
are printed too: on a machine shared with other work the wall-clock ratio is the noisy one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from _common import ROOT, measure
from fleet_data import children_cpu, generated_fleet

SEED = """
import sys
from pathlib import Path
from smoldata_tui.trace.seed_rule import seed_outcome
from smoldata_tui.session.metadata import is_trace_name
for path in sorted(p for p in Path(sys.argv[1]).rglob("*.jsonl") if p.is_file() and is_trace_name(p.name)):
    with open(path, "rb") as handle:
        outcome = seed_outcome(handle.read())
    print(path, outcome.calls)
"""


def cpu_seconds(argv: list[str]) -> float:
    """user + sys of one run of ``argv`` and every child it waited for."""
    before = os.times()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False)
    return children_cpu(before, os.times())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    folder = generated_fleet("fleet_check", args.traces, seed=10)
    traces = [p for p in folder.rglob("*.jsonl")]
    size_mb = sum(p.stat().st_size for p in traces) / 1024 / 1024
    print(f"fleet: {len(traces):,} traces, {size_mb:.0f} MB in {folder} (ready in {time.perf_counter() - started:.1f} s)")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    python = sys.executable
    env_path = {"PYTHONPATH": str(ROOT)}
    os.environ.update(env_path)
    check_argv = [python, "-m", "smoldata_tui", "check", "--json", str(folder)]
    seed_argv = [python, "-c", SEED, str(folder)]
    check = measure(check_argv, repeat=args.repeat)
    seed = measure(seed_argv, repeat=args.repeat)

    ours = {}
    for line in check.stdout.splitlines():
        row = json.loads(line)
        ours[row["path"]] = row["native_tool_calls"]
    theirs = {}
    for line in seed.stdout.splitlines():
        path, calls = line.rsplit(" ", 1)
        theirs[path] = None if calls == "None" else int(calls)
    assert ours == theirs, "the verdicts differ from the seed's rule"

    check_cpu = min(cpu_seconds(check_argv) for _ in range(args.repeat))
    seed_cpu = min(cpu_seconds(seed_argv) for _ in range(args.repeat))
    print(f"same native_tool_calls as the seed's rule for all {len(ours):,} traces")
    print(f"{'':34}{'seconds':>9}{'CPU s':>8}{'peak RSS MB (all)':>19}")
    for name, run, cpu in (("(a) smoldata-tui check --json", check, check_cpu), ("(b) seed rule, one process", seed, seed_cpu)):
        print(f"{name:34}{run.seconds:9.2f}{cpu:8.2f}{run.peak_tree_rss_mb:19.0f}")
    speedup = seed.seconds / check.seconds
    print()
    print(f"check vs seed rule: {speedup:5.2f}x faster (wall clock; target >= 1.8x on 2 CPUs) {'OK' if speedup >= 1.8 else 'MISSED'}")
    print(f"CPU time:           {check_cpu / seed_cpu:5.2f}x the seed's (check also finds, counts and writes the findings)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
