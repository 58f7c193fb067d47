"""The Training tab: the episode's ``run.training.json`` (openenv's TrainingTrace), one row per
model call, linked both ways to the timeline rows each call produced.

The file is read and validated on a worker thread (:mod:`smoldata_tui.ui.training_data`); the
links to the timeline are computed from the screen's own records once the trace is loaded.
Everything from the file (node ids, tool names, finish reasons, validation details) is model
or agent text: it is shown as plain Text with control characters neutralised, never as markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Sparkline, Static

from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.training.budget import training_budget_line
from smoldata_tui.training.sampling import sampling_text
from smoldata_tui.ui.theme_text import ThemedStatic, themed
from smoldata_tui.ui.training_data import (
    CaptureProblem,
    ToolUseRow,
    TrainingView,
    TurnLink,
    TurnSummary,
    graph_cell,
    graph_note,
    ledger_links,
    ledger_mark,
    link_turns,
    load_training,
    missing_training,
    tool_use_call_id,
    training_path_for,
    turn_of_event,
)

_LEVEL_STYLE = {"FATAL": "bold $error", "WARN": "$warning", "INFO": "dim"}
_LEVEL_MARK = {"FATAL": "\u2717", "WARN": "!", "INFO": "\u00b7"}


def _lp(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _value(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str), 40)


def summary_text(view: TrainingView) -> Text:
    turns = view.turns
    text = Text()
    prompt = sum(turn.prompt_tokens for turn in turns)
    completion = sum(turn.completion_tokens for turn in turns)
    trained = sum(turn.trained_tokens for turn in turns)
    text.append(f"{len(turns)} model call{'s' if len(turns) != 1 else ''}", "bold")
    text.append(f"  prompt {prompt:,} · completion {completion:,} · trained {trained:,} tokens\n")
    text.append(training_budget_line(view.path, [turn.prompt_tokens for turn in turns],
                                     [turn.completion_tokens for turn in turns]) + "\n", "dim")  # fmt: skip
    if view.policy is None:  # the capture sent no sampling knob: the engine chose, training pins them
        text.append("sampling ", "bold")
        text.append("none sent, so the serving engine's own defaults applied\n")
    elif isinstance(view.policy, dict):
        text.append("sampling ", "bold")
        text.append(f"training's policy: {neutralize(sampling_text(view.policy), keep_newlines=False)}\n")
    verdicts = {repr(turn.native_tool_calls) for turn in turns if turn.has_verdict}
    if verdicts:
        text.append("native_tool_calls ", "bold")
        text.append(neutralize(", ".join(sorted(verdicts)), keep_newlines=False) + "\n")
    if not view.validated and turns:
        text.append("not validated: openenv could not be imported\n", "$warning")
    elif view.problems:
        text.append(f"{len(view.problems)} capture finding(s), {view.fatal_count} fatal\n",
                    "bold $error" if view.fatal_count else "$warning")  # fmt: skip
    elif turns:
        text.append("openenv's validation: no findings\n", "$success")
    text.append_text(ledger_summary(view))
    return text


def ledger_summary(view: TrainingView) -> Text:
    """The ledger in one line: calls matched to steps, and what did not reconcile."""
    ledger, text = view.ledger, Text()
    if ledger is None:
        return text
    matched = sum(turn.step is not None for turn in ledger.turns)
    text.append("ledger ", "bold")
    text.append(f"{matched} of {len(ledger.turns)} calls matched to the stream's {len(ledger.steps)} steps")
    serious = [finding for finding in ledger.findings if finding.severity.value != "info"]
    if serious:
        text.append(f" · {len(serious)} warning/error finding(s)", "$warning")
    roots = len({node.root for node in ledger.graph})
    text.append(f" · rollout graph: {roots} root{'s' if roots != 1 else ''}")
    if ledger.side_requests:
        text.append(f" · {ledger.side_requests} request(s) without tools (OpenCode's title or summary): not turns", "dim")
    text.append("\n")
    return text


def problem_text(problem: CaptureProblem) -> Text:
    text = Text()
    where = f"turn {problem.turn + 1}" if problem.turn is not None else "file"
    text.append(f"{_LEVEL_MARK.get(problem.level, '?')} {neutralize(problem.code, keep_newlines=False)}",
                _LEVEL_STYLE.get(problem.level, ""))  # fmt: skip
    text.append(f"  {where}\n", "dim")
    text.append(clip(problem.detail, 400) + "\n")
    return text


def turn_detail_text(turn: TurnSummary, link: TurnLink | None, problems: list[CaptureProblem],
                     view: TrainingView | None = None) -> Text:  # fmt: skip
    text = Text()
    text.append(f"Turn {turn.index + 1}", "bold underline")
    text.append(f"  node {clip(turn.node_id, 40)}\n", "dim")
    for problem in problems:  # first: they decide whether the turn is trainable at all
        text.append_text(problem_text(problem))
    index = view.ledger_index(turn.index) if view is not None else None
    if index is not None:
        for finding in view.ledger.turns[index].findings:
            level = {"error": "FATAL", "warning": "WARN"}.get(finding.severity.value, "INFO")
            text.append(f"{_LEVEL_MARK[level]} {finding.kind}\n", _LEVEL_STYLE[level])
            text.append(clip(finding.message, 600) + "\n")
        text.append(graph_note(view, turn.index) + "\n", "dim")
    coverage = turn.mask_coverage
    text.append(f"tokens     prompt {turn.prompt_tokens:,} · completion {turn.completion_tokens:,} · "
                f"trained {turn.trained_tokens:,}" + (f" ({coverage:.0%})" if coverage is not None else "") + "\n")  # fmt: skip
    text.append(f"logprob    mean {_lp(turn.mean_logprob)} · min {_lp(turn.min_logprob)}\n")
    text.append(f"finish     {clip(turn.finish_reason or '-', 30)}\n")
    if turn.has_verdict:
        text.append(f"native_tool_calls {clip(repr(turn.native_tool_calls), 30)}\n")
    text.append("\nSampling       requested → applied\n", "bold")
    keys = list(dict.fromkeys([*turn.requested, *turn.applied]))
    if not keys:  # nothing sent: the engine sampled with its own defaults, which training does not pin
        text.append("none sent, so the serving engine's own defaults applied\n", "dim")
    for key in keys:
        asked = _value(turn.requested[key]) if key in turn.requested else "-"
        used = _value(turn.applied[key]) if key in turn.applied else "not sent: the engine's default applied"
        changed = key in turn.requested and key in turn.applied and turn.requested[key] != turn.applied[key]
        text.append(f"{clip(key, 22):<22} {asked} → {used}\n", "$warning" if changed else "")
    text.append("\nTool calls\n", "bold")
    if not turn.tool_calls:
        text.append("(none: a text answer)\n", "dim")
    for call in turn.tool_calls:
        text.append(f"{clip(call.name or '?', 40)}  {clip(call.call_id or '(no id)', 40)}\n")
    if link is not None:
        if link.step is None:
            text.append("no step of the trace matches this turn\n", "$warning")
        else:
            how = "by callID" if link.how == "callID" else "by order"
            text.append(f"→ step {link.step}, {len(link.events)} tool row(s) ({how}); Enter jumps there\n", "dim")
    return text


class TurnTable(DataTable, inherit_bindings=False):
    """One row per model call; Enter takes the timeline to the rows it produced."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "Next model call", show=False),
        Binding("up,k", "cursor_up", "Previous model call", show=False),
        Binding("home,g", "scroll_top", "First model call", show=False),
        Binding("end,G", "scroll_bottom", "Last model call", show=False),
        Binding("enter", "select_cursor", "Jump to this call's timeline rows"),
    ]


class TrainingPanel(Vertical):
    DEFAULT_CSS = """
    TrainingPanel { padding: 0 1; }
    TrainingPanel #training-summary { height: auto; }
    TrainingPanel .training-label { height: 1; color: $text-muted; }
    TrainingPanel Sparkline { height: 1; }
    TrainingPanel TurnTable { height: auto; max-height: 45%; margin-top: 1; }
    TrainingPanel #training-turn-scroll { height: 1fr; min-height: 6; margin-top: 1; }
    TrainingPanel #training-turn { height: auto; }
    """

    class TurnChosen(Message):
        """Enter on a turn: show these timeline events (the step's first row when no tool rows)."""

        def __init__(self, turn: int, event: int | None) -> None:
            super().__init__()
            self.turn = turn
            self.event = event

    def __init__(self, trace_path: Path, records: Callable[[], tuple[list, int]],
                 read_line: Callable[[int, int], bytes], **options) -> None:  # fmt: skip
        """``records()`` gives the screen's event records and how many are complete;
        ``read_line(offset, length)`` reads one trace line (for the tool_use callIDs)."""
        super().__init__(**options)
        self.path = training_path_for(trace_path)
        self._trace_path = trace_path
        self._records = records
        self._read_line = read_line
        self.view: TrainingView | None = None
        self.loaded = False
        self._links: list[TurnLink] = []
        self._links_for = -1  # event count the links were computed on
        self._first_event_of_step: dict[int, int] = {}

    def compose(self) -> ComposeResult:
        yield ThemedStatic(Text("Looking for the training trace…", "dim"), id="training-summary")
        yield ThemedStatic("mean logprob per model call", classes="training-label", id="training-lp-label")
        yield Sparkline([], id="training-logprob")
        yield ThemedStatic("completion tokens per model call", classes="training-label", id="training-tok-label")
        yield Sparkline([], id="training-tokens")
        yield TurnTable(cursor_type="row", zebra_stripes=True, id="training-turns")
        with VerticalScroll(id="training-turn-scroll"):
            yield ThemedStatic(id="training-turn")

    def on_mount(self) -> None:
        table = self.query_one(TurnTable)
        for label, key in (("graph", "graph"), ("#", "turn"), ("step", "step"), ("ledger", "ledger"), ("prompt", "prompt"),
                           ("out", "out"), ("mean", "mean"), ("min", "min"), ("mask", "mask"), ("tools", "tools")):  # fmt: skip
            table.add_column(Text(label, justify="left" if key in ("graph", "ledger", "tools") else "right"), key=key)
        self._show_charts(False)
        self.reload()
        self.set_interval(1.0, self._watch_file)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._paint_turn_numbers())

    def _watch_file(self) -> None:
        """A live episode writes its training trace when it ends: read it when it appears."""
        if self.view is None and self.loaded and self.path.is_file():
            self.loaded = False
            self.reload()

    def trace_grew(self) -> None:
        """The screen read more events: relink the turns to the steps that now exist."""
        if self.view is not None and self.view.turns and self._records()[1] != self._links_for:
            cursor = self.query_one(TurnTable).cursor_row
            self._fill_table()
            self.select_turn(cursor)

    # --- loading ------------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the file again (off the UI thread: validating imports openenv)."""
        self.run_worker(self._load, thread=True, exclusive=True, group="training")

    def _load(self) -> None:
        view = load_training(self.path, trace_path=self._trace_path)
        missing = missing_training(self._trace_path) if view is None else None
        self.app.call_from_thread(self._loaded, view, missing)

    def _loaded(self, view: TrainingView | None, missing: tuple[str, str] | None = None) -> None:
        self.view, self.loaded = view, True
        self._links_for = -1
        summary = self.query_one("#training-summary", Static)
        table = self.query_one(TurnTable)
        table.clear()
        if view is None:
            said, detail = missing or ("", "")
            summary.update(Text.assemble((said + "\n", "bold"), (f"({self.path.name} is not beside the trace"
                                         + (f"; {detail})" if detail else ")"), "dim")))  # fmt: skip
            self._show_charts(False)
            self.query_one("#training-turn", Static).update("")
            return
        text = summary_text(view)
        for problem in (problem for problem in view.problems if problem.turn is None):
            text.append_text(problem_text(problem))
        summary.update(text)
        self._show_charts(bool(view.turns))
        self.query_one("#training-logprob", Sparkline).data = [turn.mean_logprob or 0.0 for turn in view.turns]
        self.query_one("#training-tokens", Sparkline).data = [float(turn.completion_tokens) for turn in view.turns]
        self._fill_table()
        self._show_turn(table.cursor_row)

    def _show_charts(self, shown: bool) -> None:
        for selector in ("#training-logprob", "#training-tokens", "#training-lp-label", "#training-tok-label"):
            self.query_one(selector).display = shown

    def _fill_table(self) -> None:
        view, table = self.view, self.query_one(TurnTable)
        links = self.links()
        table.clear()
        for turn in view.turns:
            link = links[turn.index] if turn.index < len(links) else None
            coverage = turn.mask_coverage
            mark, level = ledger_mark(view, turn.index)
            cells = [
                Text(graph_cell(view, turn.index)),
                self._turn_number(turn.index),
                Text("-" if link is None or link.step is None else str(link.step), justify="right"),
                themed(Text(clip(mark, 22), _LEVEL_STYLE.get(level, "")), self.app.theme_variables),
                Text(f"{turn.prompt_tokens:,}", justify="right"),
                Text(f"{turn.completion_tokens:,}", justify="right"),
                Text(_lp(turn.mean_logprob), justify="right"),
                Text(_lp(turn.min_logprob), justify="right"),
                Text("-" if coverage is None else f"{coverage:.0%}", justify="right"),
                Text(clip(" ".join(call.name or "?" for call in turn.tool_calls) or "-", 24)),
            ]
            table.add_row(*cells, key=str(turn.index))

    def _turn_number(self, index: int) -> Text:
        """The turn's number in the colour of its worst problem, in the current theme."""
        problems = self.view.problems_of(index)
        worst = "FATAL" if any(p.level == "FATAL" for p in problems) else ("WARN" if problems else "")
        return themed(Text(f"{index + 1}", _LEVEL_STYLE.get(worst, ""), justify="right"), self.app.theme_variables)

    def _paint_turn_numbers(self) -> None:
        if self.view is None:
            return
        table = self.query_one(TurnTable)
        for turn in self.view.turns:
            table.update_cell(str(turn.index), "turn", self._turn_number(turn.index))

    # --- linking to the timeline --------------------------------------------------------------
    def links(self) -> list[TurnLink]:
        """Each turn's step and tool_use rows, recomputed when the trace has grown."""
        if self.view is None:
            return []
        records, count = self._records()
        if count != self._links_for:
            rows, firsts = [], {}
            for record in records[:count]:
                firsts.setdefault(record.step, record.index)
                if record.kind == "tool_use":
                    rows.append(ToolUseRow(record.index, record.step, tool_use_call_id(self._read_line(record.offset, record.length))))
            self._first_event_of_step = firsts
            view, steps = self.view, set(firsts)
            matched = ledger_links(view.ledger, rows, steps) if view.ledger is not None else []
            where = [view.ledger_index(turn.index) for turn in view.turns]
            own = link_turns(view.turns, rows, steps) if None in where else []  # turns the ledger left out
            self._links = [matched[index] if index is not None else own[turn] for turn, index in enumerate(where)]
            self._links_for = count
        return self._links

    def turn_of(self, event: int | None) -> int | None:
        if event is None or self.view is None:
            return None
        records, count = self._records()
        if not 0 <= event < count:
            return None
        return turn_of_event(self.links(), event, records[event].step)

    def select_turn(self, turn: int) -> None:
        table = self.query_one(TurnTable)
        if 0 <= turn < table.row_count:
            table.move_cursor(row=turn)
            self._show_turn(turn)

    def _target_event(self, turn: int) -> int | None:
        links = self.links()
        if not 0 <= turn < len(links) or links[turn].step is None:
            return None
        link = links[turn]
        return link.events[0] if link.events else self._first_event_of_step.get(link.step)

    # --- the table's messages -----------------------------------------------------------------
    @on(DataTable.RowHighlighted)
    def _highlighted(self, message: DataTable.RowHighlighted) -> None:
        message.stop()
        self._show_turn(message.cursor_row)

    @on(DataTable.RowSelected)
    def _selected(self, message: DataTable.RowSelected) -> None:
        message.stop()
        self.post_message(self.TurnChosen(message.cursor_row, self._target_event(message.cursor_row)))

    def _show_turn(self, turn: int) -> None:
        view = self.view
        if view is None or not 0 <= turn < len(view.turns):
            return
        links = self.links()
        link = links[turn] if turn < len(links) else None
        self.query_one("#training-turn", Static).update(turn_detail_text(view.turns[turn], link, view.problems_of(turn), view))
