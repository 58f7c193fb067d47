"""Grader of inventory-restock. Runs on the host, never in the sandbox.

The agent's answer arrives on stdin; `--json` prints {"correctness": 0|1, "expected": ..., "got": ...}.
The answer is a set: order, spaces, case and the separator (comma, semicolon, newline) do not matter.
"""

import json
import re
import sys

EXPECTED = ["SKU-1011", "SKU-1014", "SKU-1020", "SKU-1030", "SKU-1033"]

if __name__ == "__main__":
    got = sys.stdin.read()
    skus = [item.upper() for item in re.split(r"[,;\s]+", got.strip().strip("\"'`").rstrip(".")) if item]
    correct = len(skus) == len(set(skus)) and set(skus) == set(EXPECTED)
    result = {"correctness": int(correct), "expected": ",".join(EXPECTED), "got": got.strip()[:200]}
    print(json.dumps(result) if "--json" in sys.argv[1:] else ("correct" if correct else f"wrong: {result}"))
