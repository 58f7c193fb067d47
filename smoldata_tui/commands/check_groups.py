"""``smoldata-tui check --groups``: the groups a GRPO-style trainer learns from (``fleet/groups.py``),
as one JSON line or as a table, most learning signal first.

Every cell is a ``rich.text.Text`` of neutralised strings: task and model names come from files an
agent run wrote.
"""

from __future__ import annotations

from typing import TextIO

import orjson
from rich.text import Text

from smoldata_tui.commands.text_console import cell_limit, text_console
from smoldata_tui.fleet.groups import Group, by_signal, flags
from smoldata_tui.trace.text import clip, neutralize


def groups_line(groups: list[Group]) -> bytes:
    return orjson.dumps({"groups": [group.to_json() for group in groups]}) + b"\n"


def _number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _rewards(group: Group) -> str:
    return " ".join("·" if reward is None else f"{reward:g}" for reward in group.rewards)


def split_text(split: dict | None) -> str:
    """"step 3: passing read /workdir/sales.csv · failing bash python3 -c …" or ""."""
    if not split:
        return ""
    passing = ", ".join(split.get("passing_calls") or split.get("passing") or ["(ended)"])
    failing = ", ".join(split.get("failing_calls") or split.get("failing") or ["(ended)"])
    return f"step {split['step']}: passing {passing} · failing {failing}"


def print_groups(groups: list[Group], *, out: TextIO) -> None:
    """One block per group, most learning signal first: its header, its numbers, its flags and
    its first split, each on a line of its own so that 80 columns hold them (a pipe or a log: whole)."""
    console = text_console(out, soft_wrap=False)
    width = cell_limit(console, max(40, console.width))
    console.print(Text(f"{len(groups)} group(s) of attempts (task · model), most learning signal first", style="bold"))
    for group in by_signal(groups):
        console.print()
        header = f"{group.task or '(no task)'} · {group.model or '(no model)'} · {len(group.attempts)} attempt(s)"
        console.print(Text(neutralize(clip(header, width)), style="bold"))
        numbers = f"  rewards {_rewards(group)}   mean {_number(group.mean)}   std {_number(group.std)}"
        console.print(Text(clip(numbers, width)))
        scaled = " ".join("·" if value is None else f"{value:+.2f}" for value in group.advantages_scaled)
        console.print(Text(clip(f"  advantages (r − mean) / (std + 1e-4): {scaled}", width)))
        for flag in flags(group):
            console.print(Text(clip(f"  {flag}", width), style="yellow"))
        split = group.first_split
        if split:
            console.print(Text(f"  first split at step {split['step']}:"))
            for side in ("passing", "failing"):
                calls = ", ".join(split.get(f"{side}_calls") or split.get(side) or ["(ended)"])
                console.print(Text(neutralize(clip(f"    {side}: {calls}", width))))
