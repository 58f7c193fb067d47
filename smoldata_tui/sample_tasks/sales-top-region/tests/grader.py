"""Grader of sales-top-region. Runs on the host, never in the sandbox.

The agent's answer arrives on stdin; `--json` prints {"correctness": 0|1, "expected": ..., "got": ...}.
"""

import json
import sys

EXPECTED = "West"


def normalize(text: str) -> str:
    """Forgive what does not change the answer: spaces, case, quotes, a final full stop."""
    return text.strip().strip("\"'`").rstrip(".").strip().casefold()


if __name__ == "__main__":
    got = sys.stdin.read()
    result = {"correctness": int(normalize(got) == normalize(EXPECTED)), "expected": EXPECTED, "got": got.strip()[:200]}
    print(json.dumps(result) if "--json" in sys.argv[1:] else ("correct" if result["correctness"] else f"wrong: {result}"))
