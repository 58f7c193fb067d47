"""``smoldata-tui diff A B``: the diff screen as an app of its own."""

from __future__ import annotations

from textual.app import App

from smoldata_tui.ui.gc_tuning import QuietCollector


class DiffApp(App[None]):
    CSS_PATH = "../app.tcss"
    TITLE = "smoldata-tui diff"

    def __init__(self, a_path: str, b_path: str) -> None:
        super().__init__()
        self.a_path, self.b_path = a_path, b_path
        self.collector = QuietCollector()

    def on_mount(self) -> None:
        from smoldata_tui.ui.screens.diff import DiffScreen

        self.collector.start()  # see ui/gc_tuning.py
        self.push_screen(DiffScreen(self.a_path, self.b_path, standalone=True))

    def on_unmount(self) -> None:
        self.collector.stop()
