"""One group of attempts (k attempts of one task by one model): what GRPO makes of each, and where
the winners and losers part ways.

Above, the group's numbers and flags and its first split; then one row per attempt (reward,
advantage plain and scaled, the wrapper's verdict, status, steps, calls, tokens, last tool); below,
the attempts' tool calls step by step, one column per attempt, the first split's step marked.
Enter opens the attempt under the cursor; space marks attempts and ``d`` opens the diff of the two
marked (of the first passing and first failing attempt when none are marked); ``f`` goes to the
first split.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from smoldata_tui.fleet.groups import RUNNING, Group, flags
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.groups import GroupsScreen, number, rewards_text
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.theme_text import ThemedStatic, themed

ATTEMPT_COLUMNS = ("#", "reward", "r − mean", "scaled", "verdict", "status", "steps", "calls", "tokens", "last tool")
CELL_WIDTH = 36  # characters of one attempt's calls at one step


def verdict_text(attempt: EpisodeSummary) -> Text:
    if attempt.error is not None:
        return Text("unreadable", "$error")
    if attempt.status == RUNNING:  # its unfinished trace is no verdict yet
        return Text("running", "$accent")
    if attempt.native_tool_calls is not None:
        return Text(f"\u2713 {attempt.native_tool_calls}", "$success")
    if attempt.crash is not None:
        return Text(f"crash: {clip(attempt.crash, 30)}", "$error")
    return Text("None (rejected)", "$warning")


def attempt_row(group: Group, index: int) -> list[Text]:
    attempt = group.attempts[index]
    advantage, scaled = group.advantages[index], group.advantages_scaled[index]
    reward = attempt.env_reward
    return [
        Text(str(index), justify="right"),
        Text("…" if attempt.status == RUNNING else "—" if reward is None else f"{reward:g}",
             "$success" if attempt.passed else "$error"),
        Text("·" if advantage is None else f"{advantage:+.2f}", justify="right"),
        Text("·" if scaled is None else f"{scaled:+.2f}", justify="right"),
        verdict_text(attempt),
        Text(neutralize(clip(attempt.status or "", 12))),
        Text(str(attempt.steps), justify="right"),
        Text(str(attempt.calls), justify="right"),
        Text(str(attempt.tokens), justify="right"),
        Text(neutralize(clip(attempt.last_tool or "", 20))),
    ]


def step_cells(calls_by_attempt: list[list], step: int) -> list[Text]:
    """Each attempt's calls at ``step``, as one short line (empty: none; "ended": it had stopped)."""
    cells = []
    for calls in calls_by_attempt:
        here = [call for call in calls if call.step == step]
        if not here and step > max((call.step for call in calls), default=0):
            cells.append(Text("ended", "dim"))
            continue
        words = "; ".join(f"{call.tool} {call.summary}".strip() for call in here)
        cells.append(Text(neutralize(clip(words, CELL_WIDTH))))
    return cells


class GroupScreen(Screen[None]):
    BINDINGS = [
        Binding("question_mark", "help", "Keys"),
        Binding("escape,q", "back", "Back"),
        Binding("enter", "open", "Open the attempt", show=False),
        Binding("space", "mark", "Mark for diff", show=False),
        Binding("d", "diff", "Diff two attempts"),
        Binding("f", "first_split", "First split"),
        Binding("tab", "switch", "Attempts / steps", show=False),
    ]
    DEFAULT_CSS = """
    GroupScreen > #group-header {
        height: auto; padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis;
    }
    GroupScreen > #group-attempts { height: auto; max-height: 40%; }
    GroupScreen > #group-steps { height: 1fr; border-top: hkey $foreground 20%; }
    GroupScreen > #group-status { height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self, group: Group) -> None:
        super().__init__()
        self.group = group
        self.marked: list[int] = []
        self.calls: list[list] | None = None  # per attempt, once read

    def compose(self) -> ComposeResult:
        yield ThemedStatic(self._header(), id="group-header")
        yield DataTable(id="group-attempts", cursor_type="row")
        yield DataTable(id="group-steps", cursor_type="row")
        yield ThemedStatic(id="group-status")
        yield Footer()

    def _header(self) -> Text:
        group = self.group
        text = Text(neutralize(clip(f" {group.task or '(no task)'} · {group.model or '(no model)'}", 120)), "bold")
        text.append(f" · {len(group.attempts)} attempt(s)\n", "bold")
        text.append(f" rewards {rewards_text(group)}   mean {number(group.mean)}   std {number(group.std)}\n")
        for flag in flags(group):
            text.append(f" {flag}\n", "$warning")
        split = group.first_split
        if split:
            text.append(f" first split at step {split['step']}\n", "bold $accent")
            for side in ("passing", "failing"):
                calls = ", ".join(split.get(f"{side}_calls") or split.get(side) or ["(ended)"])
                text.append(neutralize(clip(f"   {side}: {calls}", 300)) + ("\n" if side == "passing" else ""))
        elif group.passing and group.failing:
            text.append(" passing and failing attempts never part ways step by step", "dim")
        else:
            text.append(" no passing and failing attempts to compare", "dim")
        return text

    def on_mount(self) -> None:
        attempts = self.query_one("#group-attempts", DataTable)
        attempts.add_columns(*ATTEMPT_COLUMNS)
        self._fill_attempts()
        attempts.focus()
        # The cells hold colours resolved from the theme: another theme repaints them.
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._repaint())
        self._say("reading the attempts' calls…")
        self._read_calls()

    @work(thread=True, exclusive=True, group="group-calls")
    def _read_calls(self) -> None:
        from smoldata_tui.diff.calls import DiffInputError, load_episode
        from smoldata_tui.diff.group_split import split_from_calls

        calls, unread = [], False
        for attempt in self.group.attempts:
            try:
                calls.append(load_episode(attempt.path, verdict_only=True).calls)
            except DiffInputError:
                calls.append([])
                unread = True
        group = self.group
        if not group.split_read and not unread and group.passing and group.failing:
            group.first_split = split_from_calls(calls, group.passing, group.failing)
        group.split_read = True
        self.app.call_from_thread(self._show_steps, calls)

    def _show_steps(self, calls: list[list]) -> None:
        self.calls = calls
        self.query_one("#group-header", Static).update(self._header())
        table = self.query_one("#group-steps", DataTable)
        table.add_column("step", key="step")
        for index, attempt in enumerate(self.group.attempts):
            mark = "\u2713" if attempt.passed else "\u2717"
            table.add_column(f"{mark} #{index}", key=str(index))
        self._fill_steps()
        self._say(self._status_text())
        split = (self.group.first_split or {}).get("step")
        if split:
            self.action_first_split(quiet=True)

    def _fill_attempts(self) -> None:
        attempts = self.query_one("#group-attempts", DataTable)
        variables = self.app.theme_variables
        for index in range(len(self.group.attempts)):
            attempts.add_row(*(themed(cell, variables) for cell in attempt_row(self.group, index)), key=str(index))

    def _fill_steps(self) -> None:
        calls = self.calls or []
        table = self.query_one("#group-steps", DataTable)
        last = max((call.step for attempt in calls for call in attempt), default=0)
        split = (self.group.first_split or {}).get("step")
        variables = self.app.theme_variables
        for step in range(1, last + 1):
            label = Text(f"{step} \u25c0 split" if step == split else str(step), "bold $accent" if step == split else "")
            cells = (themed(cell, variables) for cell in step_cells(calls, step))
            table.add_row(themed(label, variables), *cells, key=str(step))

    def _repaint(self) -> None:
        for table, fill in (("#group-attempts", self._fill_attempts), ("#group-steps", self._fill_steps)):
            widget = self.query_one(table, DataTable)
            row = widget.cursor_row
            widget.clear()
            fill()
            widget.move_cursor(row=row)

    def _status_text(self) -> str:
        marked = ", ".join(f"#{index}" for index in self.marked) or "none"
        return f"marked: {marked} · space marks · d diffs · f first split · Enter opens · Esc back"

    def _say(self, text: str) -> None:
        self.query_one("#group-status", Static).update(Text(text, "dim"))

    # --- actions --------------------------------------------------------------------------------
    def _attempt_under_cursor(self) -> int | None:
        table = self.query_one("#group-attempts", DataTable)
        if self.focused is table:
            return table.cursor_row
        steps = self.query_one("#group-steps", DataTable)
        column = steps.cursor_column - 1  # the first column is the step
        return column if 0 <= column < len(self.group.attempts) else table.cursor_row

    @on(DataTable.RowSelected)
    def _selected(self) -> None:  # Enter (or a click) on a row: the table takes Enter itself
        self.action_open()

    def action_open(self) -> None:
        index = self._attempt_under_cursor()
        attempt = self.group.attempts[index] if index is not None else None
        if attempt is None or attempt.error is not None:
            self.app.bell()
            return
        self.app.open_episode(Path(attempt.path), from_picker=True)

    def action_mark(self) -> None:
        index = self.query_one("#group-attempts", DataTable).cursor_row
        if index in self.marked:
            self.marked.remove(index)
        else:
            self.marked.append(index)
            del self.marked[:-2]
        self._say(self._status_text())

    def action_diff(self) -> None:
        pair = self.marked if len(self.marked) == 2 else None
        if pair is None and self.group.passing and self.group.failing:
            pair = [self.group.passing[0], self.group.failing[0]]
        if pair is None:
            self.app.notify("mark two attempts with space, then d compares them", severity="warning")
            return
        self.app.open_diff(*(self.group.attempts[index].path for index in pair))

    def action_first_split(self, quiet: bool = False) -> None:
        split = (self.group.first_split or {}).get("step")
        steps = self.query_one("#group-steps", DataTable)
        if not split or self.calls is None:
            if not quiet:
                self.app.bell()
            return
        steps.move_cursor(row=split - 1)
        if not quiet:
            steps.focus()

    def action_switch(self) -> None:
        attempts, steps = self.query_one("#group-attempts", DataTable), self.query_one("#group-steps", DataTable)
        (steps if self.focused is attempts else attempts).focus()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Attempt groups", GroupsScreen), ("One group", GroupScreen)]
