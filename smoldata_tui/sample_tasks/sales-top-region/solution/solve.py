"""Reference solution (never staged): python3 solve.py [INPUT_DIR] [ANSWER_PATH]."""

import csv
import sys
from collections import defaultdict
from pathlib import Path

source = Path(sys.argv[1] if len(sys.argv) > 1 else "/home/user/input")
answer = Path(sys.argv[2] if len(sys.argv) > 2 else "/workdir/answer.txt")
revenue = defaultdict(float)
with open(source / "sales.csv", newline="", encoding="utf-8") as handle:
    for row in csv.DictReader(handle):
        if row["order_date"].startswith("2024-"):
            revenue[row["region"]] += int(row["units"]) * float(row["unit_price"])
answer.write_text(max(revenue, key=revenue.get) + "\n", encoding="utf-8")
