"""How long `smoldata-tui diff --json` takes on two 20,000-call episodes that differ in a few places.

Two traces of the same realistic episode (smoldata_tui.trace.build_episode), B with other
session, message, part and call ids, and 3 changed commands, 3 inserted calls and 2 removed
ones. Measured, each best of --repeat, in wall and CPU seconds (the machine may be shared: CPU
time says what the work costs, wall time also how busy the machine is):

* the whole `smoldata-tui diff --json A B` in a child process (start-up, reading both sides in
  two processes, alignment, output): target <= 2 s wall on an idle 2-CPU machine;
* its parts in this process: reading both sides as --json does (verdict only) and in full (the
  screen: findings and stats too), the alignment, the edit script;
* baselines in the same run: the seed rule (the training wrapper's json.loads pass, literal) over
  the same two files, and difflib.SequenceMatcher over the same keys (not an LCS, for scale).

    python3 bench/diff_speed.py [--calls 20000] [--output-bytes 300]
"""

from __future__ import annotations

import argparse
import copy
import difflib
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from smoldata_tui.diff import diff_calls, diff_paths, load_episode  # noqa: E402
from smoldata_tui.diff.align import align  # noqa: E402
from smoldata_tui.diff.compare import _intern  # noqa: E402
from smoldata_tui.trace.build import TraceBuilder  # noqa: E402
from smoldata_tui.trace.build_episode import realistic_episode  # noqa: E402
from smoldata_tui.trace.build_json import dumps_event  # noqa: E402
from smoldata_tui.trace.seed_rule import seed_outcome  # noqa: E402

CHANGED, INSERTED, REMOVED = 3, 3, 2


def _episode(session: str, calls: int, output_bytes: int) -> TraceBuilder:
    builder = TraceBuilder(session_id=session)
    # One call per step, plus the final answer step.
    realistic_episode(builder, steps=calls + 1, rng=random.Random(7), output_bytes=output_bytes)
    return builder


def make_pair(folder: Path, calls: int, output_bytes: int) -> tuple[Path, Path, list[str]]:
    a = _episode("ses_4892557ffffeJq7Vd2KxP9mTnR", calls, output_bytes)
    b = _episode("ses_48925a1c2ffeQx8Wb3LzR7nSkT", calls, output_bytes)
    events = b.events
    tool_lines = [index for index, event in enumerate(events) if event["type"] == "tool_use"]
    rng = random.Random(11)
    places = sorted(rng.sample(range(10, len(tool_lines) - 10), CHANGED + INSERTED + REMOVED), reverse=True)
    done = []
    for number, place in enumerate(places):
        index = tool_lines[place]
        event = events[index]
        if number < CHANGED:
            event["part"]["state"]["input"]["command"] = f"echo changed {number}"
            done.append(f"changed call {place + 1}")
        elif number < CHANGED + INSERTED:
            extra = copy.deepcopy(event)
            extra["part"]["state"]["input"] = {"command": f"ls /tmp/inserted-{number}", "description": "extra"}
            extra["part"]["callID"] = f"call_inserted{number:011d}x"
            events.insert(index, extra)
            done.append(f"inserted before call {place + 1}")
        else:
            del events[index]
            done.append(f"removed call {place + 1}")
    path_a, path_b = folder / "a.jsonl", folder / "b.jsonl"
    path_a.write_bytes(a.dumps())
    path_b.write_bytes(b"".join(dumps_event(event) for event in events))
    return path_a, path_b, done


CPU = {}  # what each measurement cost in CPU time: on a shared machine wall time mostly says how busy it is


def _cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (the CLI, the reading worker)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def best_of(repeat: int, run, name: str = "") -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started, cpu = time.perf_counter(), _cpu_seconds()
        result = run()
        elapsed = time.perf_counter() - started
        if elapsed < best:
            best, CPU[name] = elapsed, _cpu_seconds() - cpu
    return best, result


def _cli(path_a: Path, path_b: Path) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [sys.executable, "-m", "smoldata_tui", "diff", "--json", str(path_a), str(path_b)]
    done = subprocess.run(command, capture_output=True, env=env)
    if done.returncode not in (0, 1):
        raise SystemExit(f"diff --json failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return done.stdout


def _seed_rule(*paths: Path) -> list:
    return [seed_outcome(path.read_bytes()).calls for path in paths]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--output-bytes", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path_a, path_b, done = make_pair(Path(tmp), args.calls, args.output_bytes)
        size = (path_a.stat().st_size + path_b.stat().st_size) / 1e6
        cli_s, _ = best_of(args.repeat, lambda: _cli(path_a, path_b), "cli")
        seed_s, seed = best_of(args.repeat, lambda: _seed_rule(path_a, path_b), "seed")
        read_s, (side_a, side_b) = best_of(
            args.repeat, lambda: (load_episode(path_a, verdict_only=True, summaries=False),
                                  load_episode(path_b, verdict_only=True, summaries=False)), "read"
        )
        full_s, _ = best_of(args.repeat, lambda: (load_episode(path_a), load_episode(path_b)), "full")
        keys_a, keys_b = _intern(side_a.calls, side_b.calls, "input_print")
        align_s, alignment = best_of(args.repeat, lambda: align(keys_a, keys_b), "align")
        script_s, diff = best_of(args.repeat, lambda: diff_calls(side_a, side_b), "script")
        total_s, _ = best_of(args.repeat, lambda: diff_paths(str(path_a), str(path_b), verdict_only=True, summaries=False), "total")
        difflib_s, matcher = best_of(
            args.repeat, lambda: difflib.SequenceMatcher(None, keys_a, keys_b).get_opcodes(), "difflib"
        )
    counts = diff.counts()
    print(f"episodes: {len(side_a.calls):,} and {len(side_b.calls):,} calls, {size:.1f} MB together; "
          f"B: {', '.join(done)}")  # fmt: skip
    print(f"result: {counts}, first divergence at pair {diff.first_divergence}, exact {diff.exact}; "
          f"seed rule's verdicts {seed}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; wall s / CPU s (with children)")
    rows = (
        ("smoldata-tui diff --json A B (child process)", cli_s, "cli"),
        ("baseline: seed rule (json.loads) on A and B", seed_s, "seed"),
        ("read both sides, verdict only (as --json)", read_s, "read"),
        ("read both sides in full (as the screen)", full_s, "full"),
        ("align the keys (Myers, linear space)", align_s, "align"),
        ("edit script: align, slide, pair, outputs", script_s, "script"),
        ("diff_paths, one process, verdict only", total_s, "total"),
        ("difflib.SequenceMatcher, same keys", difflib_s, "difflib"),
    )
    for label, wall, name in rows:
        print(f"{label:46}{wall:8.3f} / {CPU[name]:.3f}")
    print(f"diff --json against the seed rule's pass over the same files: {cli_s / seed_s:.2f}x its wall time, "
          f"{CPU['cli'] / CPU['seed']:.2f}x its CPU time; target: <= 2 s wall on an idle 2-CPU machine "
          f"({'met' if cli_s <= 2 else 'not met'} here, at load {os.getloadavg()[0]:.1f})")
    print(f"alignment: {CPU['align'] / max(CPU['difflib'], 1e-9):.2f}x difflib's CPU time")


if __name__ == "__main__":
    main()
