"""The episode screen's conversation tab: its prompt, and its link to the timeline's cursor."""

from __future__ import annotations

import re
from pathlib import Path

from textual.screen import Screen

from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.ui.widgets.conversation import PROMPT, RECOVERED, ConversationView


PROMPT_LIMIT = 1 << 20  # an instruction.md bigger than this is not read whole into the view
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def shipped_task_prompt(task: str | None) -> tuple[str, str] | None:
    """The instruction of the shipped sample task of that name, and where it came from."""
    if not task or not _TASK_NAME.fullmatch(task) or ".." in task:
        return None
    from smoldata_tui.tasks.load import default_task_root

    try:
        path = default_task_root() / task / "instruction.md"
        with path.open("rb") as handle:
            text = handle.read(PROMPT_LIMIT).decode("utf-8", "replace")
    except (OSError, Exception):  # noqa: BLE001 - no such shipped task, or no file system: no prompt
        return None
    # The metadata records the task's name, not its prompt: say which file this is.
    return text, f"from instruction.md of the shipped task \u201c{task}\u201d (the episode records only the task's name)"


def episode_prompt(screen: Screen, metadata: EpisodeMetadata | None) -> tuple[str, str] | None:
    """The prompt the agent received: the episode's own record of it, an export document's first
    user message, else (an episode saved before the record existed) the shipped task's file."""
    if metadata is not None and metadata.prompt:
        return metadata.prompt, "the prompt this episode gave the agent (run.meta.json)"
    if screen.export is not None and screen.export.document.prompt:
        return screen.export.document.prompt, "the export document's first user message"
    return shipped_task_prompt(metadata.task if metadata is not None else None)


class ConversationController:
    def __init__(self, screen: Screen) -> None:
        self.screen = screen

    @property
    def view(self) -> ConversationView:
        return self.screen.query_one(ConversationView)

    @property
    def visible(self) -> bool:
        return self.screen.panel_visible and self.screen.active_tab == "conversation"

    def opened(self) -> None:
        """A (new) trace: rebuild from the model's events."""
        self.view.reset()

    def metadata_changed(self, path: Path, metadata: EpisodeMetadata | None) -> None:
        found = episode_prompt(self.screen, metadata)
        self.view.set_prompt(*(found or (None, "")))
        self.view.set_recovered(metadata.recovered_calls if metadata is not None else [],
                                metadata.status if metadata is not None else None)  # fmt: skip

    def grew(self) -> None:
        if self.visible:
            self.view.sync()

    def shown(self) -> None:
        """The tab opened: catch up, and select what the timeline's cursor is on."""
        view = self.view
        view.sync()
        view.select_event(self.screen.timeline.cursor_event)

    def cursor_moved(self, event: int | None) -> None:
        if self.visible:
            self.view.select_event(event)

    def selected(self, event: int) -> None:
        """An item was chosen in the conversation: the timeline's cursor goes to its row."""
        screen = self.screen
        if event in (PROMPT, RECOVERED) or screen.model.count == 0:
            return
        timeline = screen.timeline
        if not timeline.go_to_event(event):  # hidden by the filter: the nearest row shown
            timeline.move_cursor(screen.model.row_near(event), center=True)
