"""Reference solution (never staged): python3 solve.py [INPUT_DIR] [ANSWER_PATH]."""

import csv
import sys
from pathlib import Path

source = Path(sys.argv[1] if len(sys.argv) > 1 else "/home/user/input")
answer = Path(sys.argv[2] if len(sys.argv) > 2 else "/workdir/answer.txt")
SIGN = {"receipt": 1, "return": 1, "sale": -1, "write-off": -1}
with open(source / "products.csv", newline="", encoding="utf-8") as handle:
    products = list(csv.DictReader(handle))
stock = {row["sku"]: int(row["opening_stock"]) for row in products}
with open(source / "movements.csv", newline="", encoding="utf-8") as handle:
    for row in csv.DictReader(handle):
        stock[row["sku"]] += SIGN[row["kind"]] * int(row["quantity"])
below = sorted(row["sku"] for row in products if stock[row["sku"]] < int(row["reorder_level"]))
answer.write_text(",".join(below) + "\n", encoding="utf-8")
