"""Reference solution (never staged): python3 solve.py [INPUT_DIR] [ANSWER_PATH]."""

import csv
import sys
from datetime import date
from pathlib import Path

source = Path(sys.argv[1] if len(sys.argv) > 1 else "/home/user/input")
answer = Path(sys.argv[2] if len(sys.argv) > 2 else "/workdir/answer.txt")


def rows(name):
    with open(source / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


signup = {
    row["customer_id"]: date.fromisoformat(row["signup_date"])
    for row in rows("customers.csv")
    if date(2024, 1, 1) <= date.fromisoformat(row["signup_date"]) <= date(2024, 3, 31)
}
cancel = {}
for row in rows("cancellations.csv"):  # a customer cancelled twice: the earliest date counts
    when = date.fromisoformat(row["cancel_date"])
    cancel[row["customer_id"]] = min(when, cancel.get(row["customer_id"], when))
churned = {c for c in signup if c in cancel and (cancel[c] - signup[c]).days <= 90}
failed = {
    row["customer_id"]
    for row in rows("payments.csv")
    if row["status"] == "failed" and row["customer_id"] in churned
    and date.fromisoformat(row["payment_date"]) <= cancel[row["customer_id"]]
}
answer.write_text(f"{len(failed)}\n", encoding="utf-8")
