"""Reference solution (never staged): python3 solve.py [INPUT_DIR] [ANSWER_PATH]."""

import csv
import statistics
import sys
from pathlib import Path

source = Path(sys.argv[1] if len(sys.argv) > 1 else "/home/user/input")
answer = Path(sys.argv[2] if len(sys.argv) > 2 else "/workdir/answer.txt")
with open(source / "employees.csv", newline="", encoding="utf-8") as handle:
    salaries = [
        int(row["salary"])
        for row in csv.DictReader(handle)
        if row["department"] == "Engineering" and row["status"] == "active"
    ]
answer.write_text(f"{statistics.median(salaries):.2f}\n", encoding="utf-8")
