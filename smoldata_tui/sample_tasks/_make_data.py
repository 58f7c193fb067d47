"""Make the data of the sample tasks, byte for byte the same on every run.

    python3 smoldata_tui/sample_tasks/_make_data.py [ROOT]

writes each task's environment/ data under ROOT (default: this folder). The files are
committed so that `pip install` carries them; a test regenerates them into a temporary
folder and compares. Each task gets its own seeded random.Random, so changing one task's
data leaves the others alone. The data is shaped so that the obvious mistake (ignoring a
filter, counting instead of rating, ...) gives a different answer from the right one; the
asserts below keep it that way.

Pure standard library: random.Random's seeded sequence is stable across Python versions
for random(), randint(), choice() and choices().
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import sys
from collections import Counter, defaultdict
from datetime import date, timedelta
from pathlib import Path


def to_csv(header: list[str], rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def day(start: date, rng: random.Random, span_days: int) -> date:
    return start + timedelta(days=rng.randrange(span_days))


def sales(rng: random.Random) -> dict[str, str]:
    products = [
        ("Desk Lamp", 34.50),
        ("Office Chair", 189.00),
        ("Monitor 27in", 279.99),
        ("Keyboard", 49.90),
        ("USB-C Hub", 39.95),
        ("Standing Desk", 499.00),
    ]
    regions = ["North", "South", "East", "West", "Central"]
    # North led in 2023, West leads in 2024: the year filter decides the answer.
    weights = {2023: [2.4, 1.0, 1.1, 0.7, 0.8], 2024: [1.0, 0.9, 1.1, 2.0, 0.8]}
    rows = []
    for number in range(360):
        year = 2023 if number % 2 == 0 else 2024
        product, price = rng.choice(products)
        region = rng.choices(regions, weights=weights[year])[0]
        rows.append([day(date(year, 1, 1), rng, 365), region, product, rng.randint(1, 12), f"{price:.2f}"])
    rows.sort(key=lambda row: row[0])
    revenue: dict[tuple[str, int], float] = defaultdict(float)
    for when, region, _, units, price in rows:
        revenue[region, 0] += units * float(price)
        revenue[region, when.year] += units * float(price)
    best_2024 = sorted(regions, key=lambda r: -revenue[r, 2024])
    assert best_2024[0] == "West" and revenue["West", 2024] > 1.05 * revenue[best_2024[1], 2024], best_2024
    assert max(regions, key=lambda r: revenue[r, 0]) != "West"
    table = [[f"SO-{10001 + i}", when.isoformat(), *rest] for i, (when, *rest) in enumerate(rows)]
    return {"input/sales.csv": to_csv(["order_id", "order_date", "region", "product", "units", "unit_price"], table)}


FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Femi", "Grace", "Hiro", "Ines", "Jonas", "Kai", "Lena", "Mateo", "Nia", "Omar", "Priya"]
LAST = ["Alvarez", "Brooks", "Chen", "Diallo", "Eriksen", "Fischer", "Gupta", "Haddad", "Ivanova", "Jensen", "Kowalski", "Lopez", "Moreau", "Nakamura"]


def employees(rng: random.Random) -> dict[str, str]:
    departments = {
        "Engineering": (["Software Engineer", "Senior Engineer", "Staff Engineer", "QA Engineer"], 92_000, 178_000),
        "Sales": (["Account Executive", "Sales Manager"], 58_000, 121_000),
        "Marketing": (["Marketing Specialist", "Content Lead"], 55_000, 110_000),
        "Finance": (["Analyst", "Controller"], 62_000, 140_000),
        "Support": (["Support Agent", "Support Lead"], 42_000, 76_000),
    }
    rows = []
    for number in range(150):
        department = rng.choices(list(departments), weights=[4, 2, 1.5, 1, 2])[0]
        titles, low, high = departments[department]
        status = "terminated" if rng.random() < 0.18 else "active"
        salary = rng.randrange(low, high, 500)
        if status == "terminated" and department == "Engineering":
            salary = min(high, salary + 22_000)  # leavers were paid more: keeping them moves the median
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        rows.append([f"E{1001 + number}", name, department, rng.choice(titles), salary, day(date(2015, 1, 1), rng, 3400), status])
    active = sorted(r[4] for r in rows if r[2] == "Engineering" and r[6] == "active")
    everyone = sorted(r[4] for r in rows if r[2] == "Engineering")
    assert len(active) % 2 == 0, "an even count: the median is the mean of the two middle salaries"
    assert median(active) != median(everyone)
    return {"input/employees.csv": to_csv(["employee_id", "name", "department", "title", "salary", "hire_date", "status"], rows)}


def median(values: list[int]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def sensors(rng: random.Random) -> dict[str, str]:
    # harbor has the most sensors, so the most faults; depot has the highest fault rate.
    sites = {"harbor": (5, 0.06), "airport": (3, 0.05), "depot": (2, 0.11), "campus": (2, 0.07)}
    sensor_rows, site_of = [], {}
    for site, (count, _) in sites.items():
        for _ in range(count):
            sensor_id = f"S{len(sensor_rows) + 1:02d}"
            site_of[sensor_id] = site
            sensor_rows.append([sensor_id, site, day(date(2022, 3, 1), rng, 700).isoformat()])
    objects = {"sensors.csv": to_csv(["sensor_id", "site", "installed_on"], sensor_rows)}
    readings, faults = Counter(), Counter()
    for offset in range(7):
        today = date(2024, 6, 3) + timedelta(days=offset)
        rows = []
        for hour in range(0, 24, 2):
            for sensor_id, site in site_of.items():
                if rng.random() < 0.03:
                    continue  # a dropped reading: sites do not all have the same count
                readings[site] += 1
                if rng.random() < sites[site][1]:
                    faults[site] += 1
                    rows.append([f"{today}T{hour:02d}:00:00", sensor_id, "", rng.choice(["fault", "fault", "Fault", "FAULT"])])
                else:
                    temperature = 14 + 8 * rng.random() + (3 if 10 <= hour <= 16 else 0)
                    rows.append([f"{today}T{hour:02d}:00:00", sensor_id, f"{temperature:.1f}", rng.choice(["ok", "ok", "OK"])])
        objects[f"readings/{today}.csv"] = to_csv(["timestamp", "sensor_id", "temperature_c", "status"], rows)
    by_rate = sorted(sites, key=lambda s: -faults[s] / readings[s])
    assert by_rate[0] == "depot" and max(sites, key=lambda s: faults[s]) == "harbor", (faults, readings)
    assert faults["depot"] / readings["depot"] > 1.15 * faults[by_rate[1]] / readings[by_rate[1]]
    bucket = [
        json.dumps({"key": key, "sha256": hashlib.sha256(text.encode()).hexdigest(), "content": text})
        for key, text in objects.items()
    ]
    return {"bucket.jsonl": "\n".join(bucket) + "\n"}


def inventory(rng: random.Random) -> dict[str, str]:
    items = ["Bolt M6", "Nut M6", "Washer 8mm", "Hinge 75mm", "Bracket L", "Cable Tie", "Wall Plug", "Drill Bit 5mm", "Sandpaper P120"]
    products, stock, reorder = [], {}, {}
    for number in range(36):
        sku = f"SKU-{1001 + number}"
        stock[sku] = rng.randint(25, 110)
        reorder[sku] = rng.randrange(10, 45, 5)
        products.append([sku, f"{rng.choice(items)} ({rng.choice(['box', 'pack', 'single'])})", reorder[sku], stock[sku]])
    movements = []
    for number in range(720):
        sku = rng.choice(list(stock))
        kind = rng.choices(["sale", "receipt", "return", "write-off"], weights=[62, 18, 12, 8])[0]
        quantity = rng.randint(1, 9) if kind != "receipt" else rng.randint(10, 40)
        if kind in ("sale", "write-off"):
            quantity = min(quantity, stock[sku])
            if quantity == 0:
                continue
        stock[sku] += quantity if kind in ("receipt", "return") else -quantity
        movements.append([day(date(2024, 7, 1), rng, 92), sku, kind, quantity])
    movements.sort(key=lambda row: row[0])
    below = sorted(sku for sku in stock if stock[sku] < reorder[sku])
    returns_ignored = Counter()
    for _, sku, kind, quantity in movements:
        returns_ignored[sku] += quantity if kind == "receipt" else -quantity if kind != "return" else 0
    assert 4 <= len(below) <= 9, below
    assert below != sorted(s for s in stock if products[int(s[4:]) - 1001][3] + returns_ignored[s] < reorder[s])
    table = [[f"MV-{50001 + i}", when.isoformat(), *rest] for i, (when, *rest) in enumerate(movements)]
    return {
        "input/products.csv": to_csv(["sku", "name", "reorder_level", "opening_stock"], products),
        "input/movements.csv": to_csv(["movement_id", "date", "sku", "kind", "quantity"], table),
    }


def churn(rng: random.Random) -> dict[str, str]:
    customers, payments, cancellations = [], [], []
    for number in range(420):
        customer = f"C{10001 + number}"
        signup = day(date(2023, 11, 1), rng, 213)  # 2023-11-01 .. 2024-05-31
        if number in (7, 8):
            signup = date(2024, 3, 31) if number == 7 else date(2024, 4, 1)  # the quarter's edges
        customers.append([customer, signup.isoformat(), rng.choice(["basic", "pro", "team"]), rng.choice(["DE", "FR", "NL", "US", "GB", "ES"])])
        cancel = signup + timedelta(days=rng.randint(5, 200)) if rng.random() < 0.45 else None
        if number in (11, 12, 13, 14):
            cancel = signup + timedelta(days=90 if number % 2 else 91)  # the 90-day edge
        end = cancel or date(2024, 8, 31)
        when = signup
        while when <= end:
            status = rng.choices(["paid", "failed", "refunded"], weights=[88, 9, 3])[0]
            if number in (11, 12, 13, 14) and when == signup:
                status = "failed"
            payments.append([customer, when.isoformat(), rng.choice(["9.00", "29.00", "79.00"]), status])
            when += timedelta(days=30)
        if cancel is not None:
            if rng.random() < 0.12:  # a retry that failed after the customer had left
                payments.append([customer, (cancel + timedelta(days=rng.randint(1, 9))).isoformat(), "29.00", "failed"])
            cancellations.append([customer, cancel.isoformat(), rng.choice(["price", "missing feature", "switched vendor", "other"])])
            if rng.random() < 0.04:  # recorded twice; the earliest date counts
                cancellations.append([customer, (cancel + timedelta(days=rng.randint(20, 60))).isoformat(), "other"])
    payments.sort(key=lambda row: (row[1], row[0]))
    cancellations.sort(key=lambda row: (row[1], row[0]))
    table = [[f"P{700001 + i}", *row] for i, row in enumerate(payments)]
    return {
        "input/customers.csv": to_csv(["customer_id", "signup_date", "plan", "country"], customers),
        "input/payments.csv": to_csv(["payment_id", "customer_id", "payment_date", "amount", "status"], table),
        "input/cancellations.csv": to_csv(["customer_id", "cancel_date", "reason"], cancellations),
    }


TASKS = {
    "sales-top-region": (sales, 101),
    "employees-median-salary": (employees, 204),
    "sensor-fault-rate": (sensors, 305),
    "inventory-restock": (inventory, 408),
    "churn-failed-payment": (churn, 505),
}


def make(root: Path) -> list[Path]:
    """Write every task's data under ``root``; return the files written."""
    written = []
    for task, (build, seed) in TASKS.items():
        for relative, text in build(random.Random(seed)).items():
            path = root / task / "environment" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
            written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for path in make(target):
        print(path)
