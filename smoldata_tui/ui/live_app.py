"""``smoldata-tui run`` without ``--headless``: the live episode in the terminal."""

from __future__ import annotations

import sys

from textual.app import App

from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.ui.commands import EpisodeCommands
from smoldata_tui.ui.gc_tuning import QuietCollector


class LiveApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "smoldata-tui"
    COMMANDS = App.COMMANDS | {EpisodeCommands}

    def __init__(self, spec: EpisodeSpec) -> None:
        super().__init__()
        self.spec = spec
        self.collector = QuietCollector()

    def on_mount(self) -> None:
        from smoldata_tui.ui.screens.live import LiveScreen

        self.collector.start()
        self.push_screen(LiveScreen(self.spec))

    def on_unmount(self) -> None:
        self.collector.stop()


def run_live(spec: EpisodeSpec) -> int:
    if not (sys.stdin.isatty() and sys.__stderr__ is not None and sys.__stderr__.isatty()):
        print("smoldata-tui run: needs a terminal; pass --headless for text output", file=sys.stderr)
        spec.endpoint.close()
        return 2
    app = LiveApp(spec)
    app.run()
    screen = next((s for s in app.screen_stack if hasattr(s, "result")), None)
    result = getattr(screen, "result", None)
    return 0 if result is not None and result.graded else 1
