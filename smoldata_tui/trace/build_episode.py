"""Plausible data-analysis episodes of any length, for benchmarks and demos.

Built on :class:`~smoldata_tui.trace.build.TraceBuilder`; fast enough for traces of
hundreds of megabytes (outputs are slices of texts built once per process).
"""

from __future__ import annotations

import random

from smoldata_tui.trace.build import TraceBuilder

__all__ = ["realistic_episode"]

_INPUT_DIR = "/home/user/input"
_CSV_PATH = f"{_INPUT_DIR}/sales_2024.csv"
_ANSWER_PATH = "/workdir/answer.txt"
_CSV_HEADER = "order_id,date,region,city,product,units,unit_price"
_REGIONS = {
    "North": ["Oslo", "Tromsø", "Bergen"],
    "South": ["São Paulo", "Sevilla", "Napoli"],
    "East": ["Kraków", "Wrocław", "Tallinn"],
    "West": ["Zürich", "Lyon", "Porto"],
}
_PRODUCTS = {"Widget": 12.5, "Gadget": 29.99, "Gizmo": 7.25, "Doohickey": 104.0}

# Tool outputs are slices of large pre-built texts, so a 150 MB trace costs string slicing,
# not formatting. Built from a fixed seed: the caller's rng only chooses sizes and offsets.
_pool_cache: dict[str, str] = {}
_POOL_MIN_CHARS = 1 << 16


def _csv_row(rng: random.Random, order_id: int) -> str:
    region = rng.choice(list(_REGIONS))
    product = rng.choice(list(_PRODUCTS))
    return (
        f"{order_id},2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},{region},"
        f"{rng.choice(_REGIONS[region])},{product},{rng.randint(1, 40)},{_PRODUCTS[product]}"
    )


def _grow_pools(min_chars: int) -> None:
    """Make sure both pools hold at least ``min_chars`` characters.

    A bigger pool is rebuilt from the same seed, so it starts with the smaller one.
    """
    if len(_pool_cache.get("numbered", "")) >= min_chars:
        return
    rng = random.Random(20240101)
    # The file as the read tool shows it, and as pandas prints it (the wider of the two, so
    # it is at least as long as the numbered pool).
    numbered: list[str] = [f"00001| {_CSV_HEADER}"]
    frame: list[str] = ["      order_id        date region      city    product  units  unit_price"]
    size = len(numbered[0]) + 1
    order_id = 1000
    while size < min_chars:
        order_id += 1
        row = _csv_row(rng, order_id)
        numbered.append(f"{len(numbered) + 1:05d}| {row}")
        oid, date, region, city, product, units, price = row.split(",")
        frame.append(
            f"{len(frame) - 1:<5} {oid:>8} {date:>11} {region:>6} {city:>9} {product:>10}"
            f" {units:>6} {price:>11}"
        )
        size += len(numbered[-1]) + 1
    _pool_cache["numbered"] = "\n".join(numbered) + "\n"
    _pool_cache["frame"] = "\n".join(frame) + "\n"


def _slice_lines(pool: str, start: int, size: int) -> str:
    """About ``size`` characters of ``pool`` from ``start``, cut on line boundaries."""
    if start:
        newline = pool.find("\n", start)
        start = newline + 1 if newline != -1 else 0
    end = pool.find("\n", start + size)
    return pool[start : end + 1 if end != -1 else len(pool)]


_ANALYSIS_SCRIPTS = [
    (
        "Compute revenue per region",
        "import pandas as pd\n"
        f"df = pd.read_csv('{_CSV_PATH}')\n"
        "df['revenue'] = df['units'] * df['unit_price']\n"
        "print(df.groupby('region')['revenue'].sum().sort_values(ascending=False))\n"
        "print(df.to_string())",
    ),
    (
        "Inspect rows with pandas",
        "import pandas as pd\n"
        f"df = pd.read_csv('{_CSV_PATH}', parse_dates=['date'])\n"
        "print(df.dtypes)\n"
        "print(df.sort_values('date').to_string())",
    ),
    (
        "Check revenue by city",
        "import pandas as pd\n"
        f"df = pd.read_csv('{_CSV_PATH}')\n"
        "df['revenue'] = df['units'] * df['unit_price']\n"
        "print(df.groupby(['region', 'city'])['revenue'].sum())\n"
        "print(df[df['units'] > 20].to_string())",
    ),
]

_NARRATION = [
    "Let me check the data with pandas.",
    "I'll compute the revenue as units × unit_price and group it.",
    "The numbers look consistent; let me double-check one more way.",
    "",
    "",
]


def realistic_episode(
    builder: TraceBuilder, *, steps: int, rng: random.Random, output_bytes: int
) -> None:
    """Append a plausible data-analysis episode of ``steps`` steps to ``builder``.

    The agent lists ``/home/user/input``, reads the CSV, runs pandas through bash (as many times as
    the step budget allows), writes ``/workdir/answer.txt`` and ends with a text and a
    ``step_finish`` reason ``"stop"``. Outputs of ``read`` and the python runs are about
    ``output_bytes`` long (±50 %, cut on line boundaries). Every call completes and has a unique
    ``callID``, so the training wrapper counts one call per ``tool_use``.

    Fast enough for benchmark traces of hundreds of megabytes: outputs are slices of texts built
    once per process.
    """
    if steps < 1:
        raise ValueError("an episode needs at least one step")
    size_limit = max(output_bytes * 3 // 2, 1)
    pool_chars = max(_POOL_MIN_CHARS, 2 * size_limit)
    _grow_pools(pool_chars)
    # Offsets are drawn from this call's own span, not from the cached pools' current length:
    # pools only grow by appending, so the same arguments give the same episode whatever ran
    # before in the process.
    python_output_span = pool_chars - size_limit
    numbered, frame = _pool_cache["numbered"], _pool_cache["frame"]

    def sized() -> int:
        return max(1, int(output_bytes * rng.uniform(0.5, 1.5)))

    # Plan: ls first, then read, then python runs, write the answer, final text.
    plan = ["final"]
    if steps >= 2:
        plan.insert(0, "ls")
    if steps >= 3:
        plan.insert(-1, "write")
    if steps >= 4:
        plan.insert(1, "read")
    plan[-2:-2] = ["python"] * (steps - len(plan))

    for kind in plan:
        builder.step_start()
        if kind == "ls":
            builder.text("I'll start by looking at the input files.")
            builder.bash(
                f"ls -la {_INPUT_DIR}",
                "total 16\ndrwxr-xr-x 2 user user 4096 Jan  1 00:00 .\n"
                "drwxr-xr-x 3 user user 4096 Jan  1 00:00 ..\n"
                "-rw-r--r-- 1 user user 8421 Jan  1 00:00 sales_2024.csv\n",
                description="List input files",
            )
        elif kind == "read":
            content = _slice_lines(numbered, 0, sized())
            builder.tool("read", {"filePath": _CSV_PATH}, f"<file>\n{content}</file>")
        elif kind == "python":
            narration = rng.choice(_NARRATION)
            if narration:
                builder.text(narration)
            description, script = rng.choice(_ANALYSIS_SCRIPTS)
            start = rng.randrange(python_output_span)
            builder.bash(
                f"cd /workdir && python3 - <<'EOF'\n{script}\nEOF",
                _slice_lines(frame, start, sized()),
                description=description,
                duration_ms=rng.randint(300, 2500),
            )
        elif kind == "write":
            builder.tool(
                "write", {"filePath": _ANSWER_PATH, "content": "West\n"}, "Wrote file successfully."
            )
        else:
            builder.text(
                "The region with the highest total revenue in 2024 is **West**. "
                f"I wrote the answer to `{_ANSWER_PATH}`."
            )
            builder.step_finish("stop")
            continue
        builder.step_finish("tool-calls")
