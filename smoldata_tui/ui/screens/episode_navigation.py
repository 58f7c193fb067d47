"""The episode screen's ways to move: findings, the filter, the search (a mixin of EpisodeScreen).

Handlers here are named ``on_<message>``, not ``@on``: Textual collects ``@on`` only from the
screen class itself, while named handlers are found along the whole class hierarchy.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from smoldata_tui.trace.text import clip
from smoldata_tui.ui.filtering import NO_FILTER, EventFilter
from smoldata_tui.ui.screens.episode_search import SearchProgress
from smoldata_tui.ui.widgets.find_bar import FindBar
from smoldata_tui.ui.widgets.findings_panel import FindingsList
from smoldata_tui.ui.widgets.timeline import Timeline
from smoldata_tui.ui.widgets.training_panel import TrainingPanel


class EpisodeNavigation:  # mixed into EpisodeScreen, which is a Screen
    # --- findings -----------------------------------------------------------------------------
    def on_findings_list_jump_requested(self, message: FindingsList.JumpRequested) -> None:
        finding = message.finding
        if finding.event is None:
            self.tell("This finding is about the whole stream, not one line.", timeout=4)
            return
        self.jump_to_event(finding.event)
        self.timeline.focus()

    def on_training_panel_turn_chosen(self, message: TrainingPanel.TurnChosen) -> None:
        if message.event is None:
            self.tell(f"Model call {message.turn + 1} matches no row of this trace.", timeout=4)
            return
        self.jump_to_event(message.event)
        self.timeline.focus()

    def action_training_turn(self) -> None:
        panel = self.query_one(TrainingPanel)
        turn = panel.turn_of(self.timeline.cursor_event)
        self.show_tab("training")
        if panel.view is None:  # the tab says more: still reading, or why there is none
            self.tell("The training trace is still being read." if not panel.loaded else
                      f"No training trace to match: no readable {panel.path.name} beside this trace.", timeout=4)  # fmt: skip
        elif turn is None:
            self.tell("No model call of the training trace produced this row.", timeout=4)
        else:
            self.query_one(TrainingPanel).select_turn(turn)

    def jump_to_event(self, event: int) -> None:
        if self.model.row_of(event) is None and self.model.filter.active and event < self.model.count:
            self.apply_filter(NO_FILTER)
            self.tell(f"The filter hid line {self.model.record(event).line}: filter cleared.", timeout=4)
        self.timeline.go_to_event(event)

    def _walk_findings(self, backwards: bool) -> None:
        current = self.timeline.cursor_event
        target = self.model.next_finding_event(-1 if current is None else current, backwards=backwards)
        if target is None:
            self.tell("No findings among the rows shown.", timeout=3)
            self.app.bell()
            return
        self.timeline.go_to_event(target)

    def action_twin(self) -> None:
        event = self.timeline.cursor_event
        related = [f.related_line for f in self.model.findings_of(event)] if event is not None else []
        target = next((self.model.event_for_line(line) for line in related if line), None)
        if target is None:
            self.tell("This row's findings point at no other line.", timeout=3)
            return
        self.jump_to_event(target)

    def action_next_finding(self) -> None:
        self._walk_findings(backwards=False)

    def action_previous_finding(self) -> None:
        self._walk_findings(backwards=True)

    # --- filter -------------------------------------------------------------------------------
    def apply_filter(self, event_filter: EventFilter) -> None:
        timeline = self.timeline
        kept = timeline.cursor_event
        self.model.set_filter(event_filter)
        timeline.invalidate()
        timeline.rows_changed(0)
        if kept is not None and self.model.row_count:
            timeline.move_cursor(self.model.row_near(kept), by_user=False, center=True)
        timeline.post_message(Timeline.CursorMoved(timeline.cursor_event))
        self._update_status()

    def palette_extras(self) -> list[tuple[str, str, Callable[[], object]]]:
        """The palette's ready-made filters (ui/screens/palette.py)."""
        presets: list[tuple[str, EventFilter]] = [
            ("Filter: only tool calls", EventFilter(kinds=frozenset({"tool_use"}))),
            ("Filter: only rows with findings", EventFilter(findings_only=True)),
            ("Filter: only rows with error findings", EventFilter(errors_only=True)),
            ("Filter: only failed or unfinished calls", EventFilter(statuses=frozenset({"error", "unfinished"}))),
            ("Filter: only text and reasoning", EventFilter(kinds=frozenset({"text", "reasoning"}))),
            ("Filter: show everything", NO_FILTER),
        ]
        for tool in sorted(self.stats.calls_by_tool):
            presets.append((f"Filter: only {clip(tool, 30)} calls", EventFilter(tools=frozenset({tool}))))
        return [(title, "hide the other rows", partial(self.apply_filter, event_filter)) for title, event_filter in presets]

    def action_filter(self) -> None:
        from smoldata_tui.ui.screens.filter import FilterScreen

        self.app.push_screen(FilterScreen(self.model.filter, self.stats, self.apply_filter))

    def action_toggle_findings_only(self) -> None:
        self.apply_filter(self.model.filter.with_changes(findings_only=not self.model.filter.findings_only))

    def action_clear_filter(self) -> None:
        self.apply_filter(NO_FILTER)

    # --- search (the logic lives in SearchController) -----------------------------------------
    def action_find(self) -> None:
        self.query_one(FindBar).open()

    def action_next_match(self) -> None:
        if self.search.active:
            self.search.step(1)
        else:
            self.action_next_finding()

    def action_previous_match(self) -> None:
        if self.search.active:
            self.search.step(-1)
        else:
            self.action_previous_finding()

    def on_search_progress(self, message: SearchProgress) -> None:
        self.search.apply(message)

    def on_find_bar_query_changed(self, message: FindBar.QueryChanged) -> None:
        self.search.start(message.query)

    def on_find_bar_step(self, message: FindBar.Step) -> None:
        self.search.step(message.direction)
        if message.leave:
            self.timeline.focus()

    def on_find_bar_closed(self) -> None:
        self.search.start("")
        self.timeline.focus()
