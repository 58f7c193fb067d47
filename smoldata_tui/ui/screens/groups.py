"""The groups a GRPO-style trainer learns from (``fleet/groups.py``): one row per (task, model) with
its attempts' rewards, mean, sample std, scaled advantages, tokens and flags, most learning signal
first. Enter opens the group (:class:`~smoldata_tui.ui.screens.group.GroupScreen`).

Opened from the fleet table (``a``, over the rows it holds) and from the batch grid (``a``, over
the batch folder). Every cell is a ``Text`` of neutralised strings: task and model names come from
files an agent run wrote.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from smoldata_tui.fleet.groups import Group, by_signal, flags, folder_groups, group_episodes
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.theme_text import ThemedStatic, themed

GROUP_COLUMNS = ("task", "k", "rewards", "mean", "std", "flags", "adv. (scaled)", "tokens", "model")


def rewards_text(group: Group) -> str:
    """Each attempt's reward: ``·`` not graded, ``…`` still running."""
    running = set(group.running)
    return " ".join("…" if index in running else "·" if reward is None else f"{reward:g}"
                    for index, reward in enumerate(group.rewards))  # fmt: skip


def number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def signed(values: list[float | None]) -> str:
    return " ".join("·" if value is None else f"{value:+.2f}" for value in values)


def tokens_text(group: Group) -> str:
    return " ".join(_short(attempt.tokens) for attempt in group.attempts)


def _short(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def group_row(group: Group) -> list[Text]:
    """The columns that say what the group teaches come first, so 80 columns show them."""
    flagged = flags(group)
    return [
        Text(neutralize(clip(group.task or "(no task)", 26))),
        Text(str(len(group.attempts)), justify="right"),
        Text(clip(rewards_text(group), 24)),
        Text(number(group.mean), justify="right"),
        Text(number(group.std), justify="right"),
        Text(clip("; ".join(flagged), 60), "$warning" if flagged else ""),
        Text(signed(group.advantages_scaled)),
        Text(tokens_text(group), "dim"),
        Text(neutralize(clip(group.model or "(no model)", 30)), "dim"),
    ]


class GroupsScreen(Screen[None]):
    BINDINGS = [
        Binding("question_mark", "help", "Keys"),
        Binding("escape,q", "back", "Back"),
        Binding("enter", "open", "Open the group"),
    ]
    DEFAULT_CSS = """
    GroupsScreen > #groups-title { height: auto; padding: 0 1; background: $panel; }
    GroupsScreen > DataTable { height: 1fr; }
    GroupsScreen > #groups-status { height: 1; padding: 0 1; background: $panel; }
    """

    def __init__(self, summaries: list[EpisodeSummary] | None = None, *, folder: Path | None = None) -> None:
        super().__init__()
        self.folder = folder
        self.groups: list[Group] = by_signal(group_episodes(summaries)) if summaries is not None else []

    def compose(self) -> ComposeResult:
        title = Text(" attempt groups, most learning signal first", "bold")
        title.append("  Enter opens · Esc back · ? keys", "dim")
        yield ThemedStatic(title, id="groups-title")
        table = DataTable(id="groups-table", cursor_type="row", zebra_stripes=False)
        yield table
        yield ThemedStatic(id="groups-status")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*GROUP_COLUMNS)
        table.focus()
        if self.folder is not None and not self.groups:
            self._say(f"reading the episodes of {clip(str(self.folder), 100)}…")
            self._read_folder()
        else:
            self._fill()

    @work(thread=True, exclusive=True, group="groups-read")
    def _read_folder(self) -> None:
        try:
            groups = folder_groups(self.folder)
        except Exception as exc:  # noqa: BLE001 - said on screen (an empty folder, a vanished one)
            self.app.call_from_thread(self._say, f"cannot read the episodes: {clip(str(exc), 200)}")
            return
        self.app.call_from_thread(self._set_groups, groups)

    def _set_groups(self, groups: list[Group]) -> None:
        self.groups = groups
        self._fill()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        variables = self.app.theme_variables
        for index, group in enumerate(self.groups):
            table.add_row(*(themed(cell, variables) for cell in group_row(group)), key=str(index))
        teaching = sum(1 for group in self.groups if not group.zero_variance)
        self._say(f"{len(self.groups)} group(s), {teaching} with a learning signal, "
                  f"{len(self.groups) - teaching} with none (every attempt got the same reward)")  # fmt: skip

    def _say(self, text: str) -> None:
        self.query_one("#groups-status", Static).update(Text(text, "dim"))

    @on(DataTable.RowSelected)
    def _selected(self) -> None:  # Enter (or a click) on a row: the table takes Enter itself
        self.action_open()

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if not self.groups:
            self.app.bell()
            return
        self.app.open_group(self.groups[table.cursor_row])

    def action_back(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Attempt groups", GroupsScreen)]
