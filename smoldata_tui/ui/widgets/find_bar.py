"""The find bar (``/``): a query, the match count, Enter/n/N to move, Esc to clear."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from smoldata_tui.ui.theme_text import ThemedStatic

DEBOUNCE_SECONDS = 0.15


class FindBar(Horizontal):
    BINDINGS = [
        Binding("escape", "close", "Clear the search", show=False),
        Binding("down", "step(1)", "Next match", show=False),
        Binding("up", "step(-1)", "Previous match", show=False),
    ]
    DEFAULT_CSS = """
    FindBar { height: 1; display: none; background: $panel; }
    FindBar.-open { display: block; }
    FindBar > #find-label { width: 7; color: $text-muted; padding: 0 0 0 1; }
    FindBar > Input { width: 1fr; border: none; height: 1; padding: 0; background: $panel; color: $text; }
    FindBar > Input:focus { border: none; }
    FindBar > #find-count { width: auto; min-width: 16; padding: 0 1; color: $text-muted; }
    """

    class QueryChanged(Message):
        def __init__(self, query: str) -> None:
            super().__init__()
            self.query = query

    class Step(Message):
        """Move to the next (+1) or previous (-1) match; ``leave`` gives focus back to the timeline."""

        def __init__(self, direction: int, leave: bool) -> None:
            super().__init__()
            self.direction = direction
            self.leave = leave

    class Closed(Message):
        pass

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._debounce: Timer | None = None
        self._pending: str | None = None  # typed, not yet searched (debounced)

    def compose(self) -> ComposeResult:
        yield ThemedStatic(Text("find /"), id="find-label")
        yield Input(placeholder="text in the events (Enter: go, Esc: clear)", id="find-input", select_on_focus=True)
        yield ThemedStatic(id="find-count")

    @property
    def query(self) -> str:
        return self.query_one(Input).value

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        self.add_class("-open")
        self.query_one(Input).focus()

    def action_close(self) -> None:
        self.close()

    def close(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._pending = None
        self.remove_class("-open")
        self.query_one(Input).value = ""
        self.set_count(Text())
        self.post_message(self.Closed())

    def set_count(self, text: Text) -> None:
        self.query_one("#find-count", Static).update(text)

    def action_step(self, direction: int) -> None:
        self.post_message(self.Step(direction, leave=False))

    @on(Input.Changed, "#find-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._pending = event.value
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._flush)

    def _flush(self) -> None:
        if self._pending is not None:
            query, self._pending = self._pending, None
            self.post_message(self.QueryChanged(query))

    @on(Input.Submitted, "#find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._debounce is not None:
            self._debounce.stop()
        self._flush()
        self.post_message(self.Step(1, leave=True))
