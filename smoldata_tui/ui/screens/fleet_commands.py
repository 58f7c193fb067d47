"""What the fleet table's command palette (Ctrl+P) adds to its keys: every sort, every filter."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.screen import Screen

from smoldata_tui.trace.text import clip
from smoldata_tui.ui.screens.fleet_view import COLUMNS, NO_TASK, FleetFilter


def fleet_palette_extras(screen: Screen) -> list[tuple[str, str, Callable[[], object]]]:
    """``screen`` is the fleet screen (its sort_by, set_filter, filter_kind, summaries, fleet_filter)."""
    commands: list[tuple[str, str, Callable[[], object]]] = []
    for column in COLUMNS:
        commands.append((f"Sort by {column.title}", "ascending", partial(screen.sort_by, column.key, descending=False)))
        commands.append((f"Sort by {column.title}, descending", "descending", partial(screen.sort_by, column.key, descending=True)))
    tasks = sorted({summary.task or NO_TASK for summary in screen.summaries.values()})
    for task in tasks:
        commands.append((f"Filter: task {clip(task, 40)}", "only this task's episodes",
                         partial(screen.set_filter, _with(screen, task=task))))  # fmt: skip
    kinds = sorted({kind for summary in screen.summaries.values() for kind in summary.kinds})
    for kind in kinds:
        commands.append((f"Filter: finding {clip(kind, 40)}", "only episodes with this finding",
                         partial(screen.filter_kind, kind)))  # fmt: skip
    return commands


def _with(screen: Screen, **changes) -> FleetFilter:
    return FleetFilter(**{**screen.fleet_filter.__dict__, **changes})
