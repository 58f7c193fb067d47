"""Grader of churn-failed-payment. Runs on the host, never in the sandbox.

The agent's answer arrives on stdin; `--json` prints {"correctness": 0|1, "expected": ..., "got": ...}.
"""

import json
import sys

EXPECTED = 11


def parse(text: str) -> float | None:
    """A number, forgiving spaces (so "11" and "11.0" both read 11); None if it is not one."""
    try:
        return float(text.strip())
    except ValueError:
        return None


if __name__ == "__main__":
    got = sys.stdin.read()
    correct = parse(got) == EXPECTED
    result = {"correctness": int(correct), "expected": EXPECTED, "got": got.strip()[:200]}
    print(json.dumps(result) if "--json" in sys.argv[1:] else ("correct" if correct else f"wrong: {result}"))
