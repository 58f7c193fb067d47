"""Grader of employees-median-salary. Runs on the host, never in the sandbox.

The agent's answer arrives on stdin; `--json` prints {"correctness": 0|1, "expected": ..., "got": ...}.
TOLERANCE (from [verifier.env]) is how far from the median an answer may be.
"""

import json
import math
import os
import sys

EXPECTED = 140250.00


def parse(text: str) -> float | None:
    """A number, forgiving spaces, a dollar sign and thousands separators; None if it is not one."""
    try:
        value = float(text.strip().lstrip("$").replace(",", "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


if __name__ == "__main__":
    if "TOLERANCE" not in os.environ:
        sys.exit("grader: TOLERANCE is not set (it comes from [verifier.env] in task.toml)")
    got = sys.stdin.read()
    value = parse(got)
    correct = value is not None and abs(value - EXPECTED) <= float(os.environ["TOLERANCE"])
    result = {"correctness": int(correct), "expected": f"{EXPECTED:.2f}", "got": got.strip()[:200]}
    print(json.dumps(result) if "--json" in sys.argv[1:] else ("correct" if correct else f"wrong: {result}"))
