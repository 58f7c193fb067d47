"""``smoldata-tui run`` with a batch and without ``--headless``: the live grid (which stays when the
batch ends, with pass@k; `e` opens the fleet table over the batch folder). Every way out of the app cancels every episode first and waits for
their sandboxes to be released (the live app's stop paths, with the grid as their one episode)."""

from __future__ import annotations

import sys

from smoldata_tui.session.batch import BatchPlan
from smoldata_tui.ui.exit_status import has_terminal, tui_exit_status
from smoldata_tui.ui.apps.live import LiveApp, _run_guarded


class BatchApp(LiveApp):
    def __init__(self, plan: BatchPlan) -> None:
        super().__init__()
        self.plan = plan
        self.grid = None

    def first_screen(self):
        from smoldata_tui.ui.screens.batch import BatchScreen

        self.grid = BatchScreen(self.plan)
        return self.grid


def batch_exit_status(app: BatchApp) -> int:
    """As headless: 0 when every episode was graded, else 1."""
    summary = app.grid.summary if app.grid is not None else None
    return 0 if summary is not None and not summary["failed"] else 1


def run_batch_live(plan: BatchPlan) -> int:
    if not has_terminal():
        print("smoldata-tui run: needs a terminal; pass --headless for text output", file=sys.stderr)
        return 2
    app = BatchApp(plan)
    _run_guarded(app)
    return tui_exit_status(app, batch_exit_status(app), stop_status=app.stop_status)
