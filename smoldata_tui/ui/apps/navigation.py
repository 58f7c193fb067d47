"""The one place screens open each other.

A screen that leads to another (an episode from the fleet table, a diff from a group, the live
screen from the launch form) asks its app — ``self.app.open_episode(...)`` — instead of importing
the other screen, so no screen module imports a peer and the screens form no import circle. Every
app of the project mixes this class in; the dialogs a screen owns (its help, filter, confirmations)
stay with that screen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.screen import Screen


class Navigation:
    """Mixed into every :class:`textual.app.App` of the project (it supplies ``push_screen``)."""

    push_screen: Callable[..., Any]

    def open_episode(self, path: Path, *, callback: Callable[[Any], None] | None = None, **options: Any) -> Screen:
        """The episode viewer on ``path`` (``follow``, ``speed``, ``from_picker`` as EpisodeScreen takes them)."""
        from smoldata_tui.ui.screens.episode import EpisodeScreen

        screen = EpisodeScreen(path, **options)
        self.push_screen(screen, callback)
        return screen

    def open_fleet(self, folder: Path, *, standalone: bool = False, **options: Any) -> None:
        """The fleet table over ``folder``; ``standalone``: it is the whole app, so leaving it quits."""
        from smoldata_tui.ui.screens.fleet import FleetScreen

        self.push_screen(FleetScreen(folder, standalone=standalone, **options))

    def open_groups(self, summaries: list | None = None, *, folder: Path | None = None) -> None:
        """The attempt groups of these episode summaries, or of the episodes saved in ``folder``."""
        from smoldata_tui.ui.screens.groups import GroupsScreen

        self.push_screen(GroupsScreen(summaries, folder=folder) if summaries is not None else GroupsScreen(folder=folder))

    def open_group(self, group: Any) -> None:
        from smoldata_tui.ui.screens.group import GroupScreen

        self.push_screen(GroupScreen(group))

    def open_diff(self, left: Path | str, right: Path | str) -> None:
        from smoldata_tui.ui.screens.diff import DiffScreen

        self.push_screen(DiffScreen(left, right))

    def open_live(self, spec: Any) -> None:
        """A live episode of ``spec`` (an EpisodeSpec), started as the screen mounts; its ``q`` comes back here."""
        from smoldata_tui.ui.screens.live import LiveScreen

        self.push_screen(LiveScreen(spec, back_on_quit=True))

    def ask_to_fork(self, episode_screen: Screen) -> None:
        """From the episode screen: its cursor row's step, confirmed, then the fork form."""
        from smoldata_tui.ui.screens.fork_launch import ask_to_fork

        ask_to_fork(episode_screen)
