"""Reference solution (never staged): python3 solve.py [INPUT_DIR] [ANSWER_PATH]."""

import csv
import sys
from collections import Counter
from pathlib import Path

source = Path(sys.argv[1] if len(sys.argv) > 1 else "/home/user/input")
answer = Path(sys.argv[2] if len(sys.argv) > 2 else "/workdir/answer.txt")
with open(source / "sensors.csv", newline="", encoding="utf-8") as handle:
    site_of = {row["sensor_id"]: row["site"] for row in csv.DictReader(handle)}
readings, faults = Counter(), Counter()
for day in sorted((source / "readings").glob("*.csv")):
    with open(day, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            site = site_of[row["sensor_id"]]
            readings[site] += 1
            faults[site] += row["status"].strip().lower() == "fault"
answer.write_text(max(readings, key=lambda site: faults[site] / readings[site]) + "\n", encoding="utf-8")
