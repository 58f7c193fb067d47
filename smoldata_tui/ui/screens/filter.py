"""The filter dialog (``f``): event types, tools, call statuses, findings only. Applies live."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Label, SelectionList
from textual.widgets.selection_list import Selection

from smoldata_tui.trace import Stats
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.filtering import CALL_STATUSES, NO_FILTER, EventFilter

KNOWN_KINDS = ("step_start", "text", "reasoning", "tool_use", "step_finish", "error")


def _choices(counts: dict[str, int], chosen: frozenset[str], order: tuple[str, ...] = ()) -> list[Selection]:
    names = [name for name in order if name in counts or name in chosen]
    names += sorted(name for name in set(counts) | set(chosen) if name not in names)
    # Names come from the trace: Content(...) is literal text, never markup.
    return [Selection(Content(f"{clip(name, 24)}  ({counts.get(name, 0):,})"), name, name in chosen) for name in names]


def status_counts(stats: Stats) -> dict[str, int]:
    counts = {status: 0 for status in CALL_STATUSES}
    for status, count in stats.calls_by_status.items():
        counts[status if status in ("completed", "error") else "unfinished"] += count
    return counts


class FilterScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,f", "close", "Close the filter"),
        Binding("u", "clear", "Clear the filter"),
    ]
    DEFAULT_CSS = """
    FilterScreen { align: center middle; }
    FilterScreen > #filter-dialog {
        width: 96; max-width: 100%; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    FilterScreen #filter-lists { height: auto; max-height: 20; }
    FilterScreen SelectionList { width: 1fr; height: auto; max-height: 18; border-title-color: $foreground; }
    FilterScreen #filter-buttons { height: auto; align-horizontal: right; }
    FilterScreen Label.hint { color: $text-muted; }
    """

    def __init__(self, current: EventFilter, stats: Stats, apply: Callable[[EventFilter], None]) -> None:
        super().__init__()
        self.current = current
        self.stats = stats
        self.apply = apply

    def compose(self) -> ComposeResult:
        stats = self.stats
        with Vertical(id="filter-dialog"):
            yield Label(Content("Show only… (changes apply at once; nothing ticked in a list = any)"))
            with Horizontal(id="filter-lists"):
                kinds = SelectionList(
                    *_choices(dict(stats.events_by_type), self.current.kinds, KNOWN_KINDS), id="filter-kinds"
                )
                kinds.border_title = "event type"
                yield kinds
                tools = SelectionList(*_choices(dict(stats.calls_by_tool), self.current.tools), id="filter-tools")
                tools.border_title = "tool"
                yield tools
                statuses = SelectionList(
                    *_choices(status_counts(stats), self.current.statuses, CALL_STATUSES), id="filter-statuses"
                )
                statuses.border_title = "call status"
                yield statuses
            yield Checkbox(Content("only rows with findings"), self.current.findings_only, id="filter-findings")
            yield Checkbox(Content("only rows with error findings"), self.current.errors_only, id="filter-errors")
            with Horizontal(id="filter-buttons"):
                yield Label(Content("space/enter: tick  tab: next list  u: clear  esc: close  "), classes="hint")
                yield Button("Clear", id="filter-clear")
                yield Button("Done", id="filter-done", variant="primary")

    def _read(self) -> EventFilter:
        return EventFilter(
            kinds=frozenset(self.query_one("#filter-kinds", SelectionList).selected),
            tools=frozenset(self.query_one("#filter-tools", SelectionList).selected),
            statuses=frozenset(self.query_one("#filter-statuses", SelectionList).selected),
            findings_only=self.query_one("#filter-findings", Checkbox).value,
            errors_only=self.query_one("#filter-errors", Checkbox).value,
        )

    @on(SelectionList.SelectedChanged)
    @on(Checkbox.Changed)
    def _changed(self) -> None:
        chosen = self._read()
        if chosen != self.current:
            self.current = chosen
            self.apply(chosen)

    @on(Button.Pressed, "#filter-done")
    def action_close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#filter-clear")
    def action_clear(self) -> None:
        for selection_list in self.query(SelectionList):
            selection_list.deselect_all()
        for checkbox in self.query(Checkbox):
            checkbox.value = False
        self.current = NO_FILTER
        self.apply(NO_FILTER)
