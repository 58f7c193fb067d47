"""``smoldata-tui diff A B``: the diff screen as an app of its own."""

from __future__ import annotations

from textual.app import App

from smoldata_tui.ui.apps.navigation import Navigation
from smoldata_tui.ui.gc_tuning import QuietCollector
from smoldata_tui.ui.theme_text import ReadableTheme


class DiffApp(ReadableTheme, Navigation, App[None]):
    TITLE = "smoldata-tui diff"

    def __init__(self, a_path: str, b_path: str) -> None:
        super().__init__()
        from smoldata_tui.ui.screens.diff import DiffScreen

        self.diff_screen = DiffScreen(a_path, b_path, standalone=True)
        self.collector = QuietCollector()

    def on_mount(self) -> None:
        self.collector.start()  # see ui/gc_tuning.py
        self.push_screen(self.diff_screen)

    @property
    def outcome(self) -> int:
        """The command's exit status: 0 same calls (or quit before the diff was ready), 1 they
        differ, 2 a path could not be compared."""
        if self.diff_screen.error is not None:
            return 2
        diff = self.diff_screen.diff
        return 1 if diff is not None and not diff.identical else 0

    def on_unmount(self) -> None:
        self.collector.stop()
