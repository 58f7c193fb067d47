"""The fleet table's command palette (Ctrl+P): every key's action, every sort, every filter."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from smoldata_tui.trace.text import clip
from smoldata_tui.ui.commands import EpisodeCommands


class FleetCommands(EpisodeCommands):
    """The episode palette's search and display, over the fleet table's commands."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        from smoldata_tui.ui.screens.catalogue import catalogue_for
        from smoldata_tui.ui.screens.fleet import FleetScreen
        from smoldata_tui.ui.screens.fleet_table import FleetTable
        from smoldata_tui.ui.screens.fleet_view import COLUMNS, NO_TASK

        screen = self.screen
        if not isinstance(screen, FleetScreen):
            return []
        targets = {FleetScreen: screen, FleetTable: screen.table}
        commands: list[tuple[str, str, Callable[[], object]]] = []
        for entry in catalogue_for(screen):
            target = targets.get(entry.owner)
            if target is not None:
                commands.append((entry.description, f"{entry.context} · key {entry.keys}", partial(target.run_action, entry.action)))
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


def _with(screen, **changes):
    from smoldata_tui.ui.screens.fleet_view import FleetFilter

    return FleetFilter(**{**screen.fleet_filter.__dict__, **changes})
