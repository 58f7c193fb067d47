"""The episode screen: header, timeline, side panel (detail / findings / stats / episode).

Its ways to move, its side panel and its playback keys are mixins beside it: episode_navigation,
episode_side_panel and episode_playback.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
from smoldata_tui.replay.divergence import describe_divergence, load_divergences
from smoldata_tui.trace import Stats, Verdict
from smoldata_tui.trace.text import neutralize
from smoldata_tui.ui.gc_tuning import LoadFreezer
from smoldata_tui.ui.screens.episode_conversation import ConversationController
from smoldata_tui.ui.screens.episode_detail import DetailController
from smoldata_tui.ui.screens.episode_export import open_export
from smoldata_tui.ui.screens.episode_navigation import EpisodeNavigation
from smoldata_tui.ui.screens.episode_live_rows import LiveRows, ProcessProbe, live_rows, recovered_rows
from smoldata_tui.ui.screens.episode_playback import EpisodePlaybackKeys, PlaybackController
from smoldata_tui.ui.screens.episode_search import SearchController
from smoldata_tui.ui.screens.episode_side_panel import TABS, EpisodeSidePanel
from smoldata_tui.ui.screens.episode_status import header_state, status_line
from smoldata_tui.ui.screens.quit_or_back import QUIT_OR_BACK, QuitOrBack
from smoldata_tui.ui.theme_text import ThemedStatic
from smoldata_tui.ui.timeline_model import TimelineModel
from smoldata_tui.ui.trace_follower import TraceFollower
from smoldata_tui.ui.widgets.conversation import ConversationView
from smoldata_tui.ui.widgets.detail import DetailView
from smoldata_tui.ui.widgets.episode_panel import EpisodePanel
from smoldata_tui.ui.widgets.find_bar import FindBar
from smoldata_tui.ui.widgets.findings_panel import FindingsList, FindingsPanel
from smoldata_tui.ui.widgets.header import EpisodeHeader
from smoldata_tui.ui.widgets.stats_panel import StatsPanel
from smoldata_tui.ui.widgets.timeline import LineSource, Timeline, TimelineHeader
from smoldata_tui.ui.widgets.training_panel import TrainingPanel, TurnTable


class EpisodeScreen(QuitOrBack, EpisodeNavigation, EpisodeSidePanel, EpisodePlaybackKeys, Screen[None]):
    BINDINGS = [
        Binding("slash", "find", "Find"),
        Binding("n", "next_match", "Next match (or finding)", show=False),
        Binding("N", "previous_match", "Previous match (or finding)", show=False),
        Binding("right_square_bracket", "next_finding", "Next finding"),
        Binding("left_square_bracket", "previous_finding", "Previous finding", show=False),
        Binding("t", "twin", "Go to the line a finding points at (a duplicate's twin)", show=False),
        Binding("f", "filter", "Filter"),
        Binding("e", "toggle_findings_only", "Only rows with findings", show=False),
        Binding("u", "clear_filter", "Clear the filter", show=False),
        Binding("r", "toggle_raw", "Raw JSON"),
        Binding("p", "toggle_panel", "Side panel", show=False),
        Binding("1", "show_tab('detail')", "Detail tab", show=False),
        Binding("2", "show_tab('findings')", "Findings tab", show=False),
        Binding("3", "show_tab('stats')", "Stats tab", show=False),
        Binding("4", "show_tab('episode')", "Episode / grade tab", show=False),
        Binding("5", "show_tab('training')", "Training tab", show=False),
        Binding("c,6", "show_tab('conversation')", "Conversation", key_display="c"),
        Binding("m", "training_turn", "Training: the model call that produced this row", show=False),
        Binding("y", "copy_line", "Copy the event's JSON line", show=False),
        Binding("escape", "back", "Back: to the timeline, clear the search, to the trace list", show=False),
        Binding("space", "playback_toggle", "Pause / resume playback"),
        Binding("full_stop", "playback_step", "Playback: one more event"),
        Binding("greater_than_sign", "playback_speed(2)", "Playback: twice as fast", show=False),
        Binding("less_than_sign", "playback_speed(0.5)", "Playback: half as fast", show=False),
        Binding("K", "end_call", "Live: end the running tool call (the agent goes on)", show=False),
        Binding("F", "fork", "Fork the episode at this row's step", show=False),
        Binding("question_mark", "help", "Keys"),
        *QUIT_OR_BACK,
    ]

    def __init__(
        self, path: Path, *, follow: bool = False, speed: float | None = None, from_picker: bool = False
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self.follow = follow
        self.speed = speed
        self.from_picker = from_picker
        self.live = follow or speed is not None
        self.model = TimelineModel()
        self.source = LineSource()
        self.generation = 0
        self.finished = False
        self.stats = Stats()
        self.verdict: Verdict | None = None
        self.metadata: EpisodeMetadata | None = None
        self.divergences: list[dict] = []  # a replayed episode's, from the file beside the trace
        self.progress = ""
        self.notice = ""
        self.panel_wanted: bool | None = None  # None: decided by the terminal width
        self.playback = PlaybackController(self, speed) if speed is not None else None
        self.detail = DetailController(self)
        self.conversation = ConversationController(self)
        self._status_text: Text | None = None
        self.freezer = LoadFreezer()
        self.search = SearchController(self)
        # Set by the live screen: the shell-tool commands running in the sandbox now.
        self.process_probe: ProcessProbe | None = None
        self.call_ender = None  # while a live episode runs: asks, then ends the tool call it is running
        self._processes: list = []
        # An `opencode export` document is shown through its converted events (only a saved file).
        self.export = open_export(self.path) if not self.live else None
        if self.export is not None:
            self.notice = self.export.notice()

    # --- layout -------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        timeline = Timeline(self.model, self.source, tail=self.live, id="timeline")
        yield EpisodeHeader(id="header")
        with Horizontal(id="body"):
            with Vertical(id="main"):
                yield TimelineHeader(timeline, id="columns")
                yield timeline
                yield LiveRows(id="live-rows")
                yield ThemedStatic(id="status-line")
                yield FindBar(id="find-bar")
            with TabbedContent(id="side", initial=TABS["detail"]):
                with TabPane("Detail", id=TABS["detail"]):
                    yield DetailView(id="detail")
                with TabPane("Findings", id=TABS["findings"]):
                    yield FindingsPanel(id="findings")
                with TabPane("Stats", id=TABS["stats"]):
                    yield StatsPanel(id="stats")
                with TabPane("Episode", id=TABS["episode"]):
                    yield EpisodePanel(id="episode")
                with TabPane("Training", id=TABS["training"]):
                    yield TrainingPanel(self.path, lambda: (self.model.events, self.model.count), self.source.read,
                                        id="training")  # fmt: skip
                with TabPane("Conversation", id=TABS["conversation"]):
                    yield ConversationView(self.model, self.source.read, id="conversation")
        yield Footer()
        followed = self.export.converted if self.export is not None else self.path
        yield TraceFollower(followed, follow=self.follow, release_limit=0 if self.speed is not None else None)

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def follower(self) -> TraceFollower:
        return self.query_one(TraceFollower)

    def on_mount(self) -> None:
        self.timeline.focus()
        self.refresh_header()
        self._update_live_rows()
        if self.follow:
            self.set_interval(1.0, self._tick)
        if self.export is not None:
            self.tell(self.export.notice(), title="Not a run --format json stream", severity="warning", timeout=12)
            self._update_status()
        if self.playback is not None:
            self.playback.start()

    def on_unmount(self) -> None:
        self.source.close()
        if self.export is not None:
            self.export.close()
        self.freezer.release()  # or the picker's next episode would keep this one in memory

    # --- the reader's messages ----------------------------------------------------------------
    @on(TraceFollower.Opened)
    def _opened(self, message: TraceFollower.Opened) -> None:
        self.generation = message.generation
        self.source.replace(message.fd)
        self.model.reset(message.events, message.findings)
        self.finished = False
        timeline = self.timeline
        timeline.pending = 0
        timeline.invalidate(summaries=True)
        timeline.rows_changed(0)
        self.search.reset()
        self.conversation.opened()
        # a "waiting for the file" notice is over too; what an export document is stays said
        self.notice = message.notice or (self.export.notice() if self.export is not None else "")
        if message.notice:
            self.tell(message.notice, title="Trace reset", severity="warning", timeout=8)
        self._update_status()

    @on(TraceFollower.Grew)
    def _grew(self, message: TraceFollower.Grew) -> None:
        if message.generation != self.generation:
            return
        model, timeline = self.model, self.timeline
        was_empty = model.count == 0
        kept_event = timeline.cursor_event
        added = model.extend(message.event_count)
        new_findings = message.finding_count != model.finding_count
        refiltered = model.add_findings(message.finding_count)
        if refiltered and kept_event is not None:
            timeline.move_cursor(model.row_near(kept_event), by_user=False)
        timeline.rows_changed(added)
        if new_findings:
            timeline.invalidate()
            self.query_one(FindingsPanel).set_findings(model.findings, model.finding_count)
            self._label_tab("findings", f"Findings ({model.finding_count:,})")
        self.stats, self.verdict, self.finished = message.stats, message.verdict, message.finished
        if self.export is not None:
            self.verdict = self.export.verdict
        if self.query_one(TabbedContent).active == TABS["stats"]:
            self.query_one(StatsPanel).set_stats(message.stats)
        if message.finished or message.file_size == 0 or (message.caught_up and self.live):
            self.progress = ""
        else:
            self.progress = f"loading {message.bytes_read / message.file_size:.0%}"
        if was_empty and model.row_count:
            self.detail.show(timeline.cursor_event)
        self.search.grew()
        self.refresh_header()
        self._update_status()
        if added or message.finished:
            self._update_live_rows()
        if message.finished or (added and message.caught_up):
            # Relinking reads every tool_use line: once the file is read, not on each batch of a big one.
            self.query_one(TrainingPanel).trace_grew()
            self.conversation.grew()
        self.freezer.loaded(model.count, message.caught_up)

    @on(TraceFollower.MetadataChanged)
    def _metadata(self, message: TraceFollower.MetadataChanged) -> None:
        self.metadata = message.metadata
        self.divergences = load_divergences(self.path)  # written just before the metadata's last version
        self.query_one(EpisodePanel).set_metadata(message.metadata, metadata_path_for(self.path).name, message.problems,
                                                  folder=self.path.parent, divergences=self.divergences)  # fmt: skip
        graded = message.metadata is not None and message.metadata.grade is not None
        self._label_tab("episode", "Grade" if graded else "Episode")
        self.conversation.metadata_changed(self.path, message.metadata)
        self._update_live_rows()
        for problem in message.problems:
            self.tell(problem, title="Episode metadata", severity="warning", timeout=8)
        self.refresh_header()

    @on(TraceFollower.Waiting)
    def _waiting(self, message: TraceFollower.Waiting) -> None:
        self.notice = message.reason
        self._update_status()

    @on(TraceFollower.Failed)
    def _failed(self, message: TraceFollower.Failed) -> None:
        self.notice = message.reason
        self.tell(message.reason, title="Cannot read the trace", severity="error", timeout=15)
        self._update_status()

    # --- what the stream does not show (yet) -------------------------------------------------
    def _tick(self) -> None:
        """While the episode runs, elapsed times move and the open step says what it is doing."""
        if self.finished:
            return
        self.refresh_header()
        model = self.model
        step_open = model.count > 0 and model.record(model.count - 1).kind not in ("step_finish", "error")
        if self.process_probe is not None and step_open:
            self.run_worker(self._probe, thread=True, exclusive=True, group="process-probe", exit_on_error=False)
        self._update_live_rows()

    def _probe(self) -> None:
        processes = list(self.process_probe()) if self.process_probe is not None else []
        self.app.call_from_thread(self._probed, processes)

    def _probed(self, processes: list) -> None:
        self._processes = processes
        self._update_live_rows()

    def _update_live_rows(self) -> None:
        running = self.follow and not self.finished and (self.metadata is None or self.metadata.status in (None, "running"))
        text = live_rows(self.model, running=running, processes=self._processes if running else ())
        recovered = recovered_rows(self.metadata)
        if recovered.plain:
            text = recovered if not text.plain else Text("\n").join([text, recovered])
        self.query_one(LiveRows).show(text)

    # --- header and status line ---------------------------------------------------------------
    def refresh_header(self) -> None:
        if self.playback is not None:
            activity = self.playback.activity()
        elif self.follow and not self.finished:
            activity = self.progress or "\u25cf following"
        else:
            activity = self.progress
        self.query_one(EpisodeHeader).state = header_state(
            self.path,
            self.metadata,
            self.model,
            self.stats,
            self.verdict,
            finished=self.finished,
            live=self.live,
            activity=activity,
            divergences=tuple(describe_divergence(record) for record in self.divergences),
        )

    def _update_status(self) -> None:
        text = status_line(self.model, self.timeline.pending, self.notice)
        if text == self._status_text:
            return  # Static.update re-lays out the screen: not ten times a second for nothing
        self._status_text = text
        line = self.query_one("#status-line", Static)
        line.update(text)
        line.display = bool(text.plain)

    @on(Timeline.FollowRequested)
    def _follow_requested(self) -> None:
        if self.playback is not None:
            self.playback.to_end()

    @on(Timeline.PendingChanged)
    def _pending(self) -> None:
        self._update_status()

    def on_click(self, event: events.Click) -> None:
        if getattr(event.widget, "id", None) == "status-line" and self.timeline.pending:
            self.timeline.action_last()

    # --- the detail pane ----------------------------------------------------------------------
    @on(Timeline.CursorMoved)
    def _cursor_moved(self, message: Timeline.CursorMoved) -> None:
        self.detail.cursor_moved(message.event, message.by_user)
        self.conversation.cursor_moved(message.event)
        self.search.update_count()

    @on(ConversationView.Selected)
    def _conversation_selected(self, message: ConversationView.Selected) -> None:
        self.conversation.selected(message.event)

    @on(Timeline.DetailRequested)
    def _detail_requested(self, message: Timeline.DetailRequested) -> None:
        self.show_tab("detail")
        self.query_one(DetailView).focus()

    # --- copy, back, quit, help ---------------------------------------------------------------
    def action_copy_line(self) -> None:
        event = self.timeline.cursor_event
        if event is None:
            return
        record = self.model.record(event)
        raw = self.source.read_shown(record.offset, record.length)
        self.app.copy_to_clipboard(raw.decode("utf-8", "replace"))
        copied = f"({record.length:,} bytes)" if len(raw) == record.length else f"(its first {len(raw):,} of {record.length:,} bytes)"
        self.tell(f"Copied line {record.line} {copied}.", timeout=3)

    def action_back(self) -> None:
        """Esc, one step at a time: to the timeline, then clear the search, then to the picker."""
        if self.focused is not self.timeline:
            self.timeline.focus()
        elif self.search.active or self.query_one(FindBar).is_open:
            self.query_one(FindBar).close()
        elif self.from_picker:
            self.dismiss(None)

    def q_quits(self) -> bool:
        return not self.from_picker

    def action_leave(self, _label: str = "") -> None:
        if self.from_picker:
            self.dismiss(None)
        else:
            self.app.exit()

    def tell(self, message: str, **options) -> None:
        """A notification of plain text: never markup (Toast would parse a str as markup and
        cannot take a Text), control characters of file names and trace text made visible."""
        self.notify(neutralize(message, keep_newlines=False), markup=False, **options)

    def action_end_call(self) -> None:
        if self.call_ender is None:
            self.app.notify("only while a live episode runs (smoldata-tui run)", severity="warning")
            return
        self.call_ender()

    def action_fork(self) -> None:
        self.app.ask_to_fork(self)

    def action_help(self) -> None:
        from smoldata_tui.ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    # --- keys: the help's sections and the palette's targets (ui/screens/catalogue.py, palette.py) --
    def help_sections(self) -> list[tuple[str, type]]:
        from smoldata_tui.ui.screens.filter import FilterScreen

        return [("Timeline", Timeline), ("Episode", EpisodeScreen), ("Detail pane", DetailView),
                ("Findings list", FindingsList), ("Conversation", ConversationView), ("Training tab", TurnTable),
                ("Find bar", FindBar), ("Filter dialog", FilterScreen)]  # fmt: skip

    def palette_targets(self) -> dict[type, object]:
        return {EpisodeScreen: self, Timeline: self.timeline, DetailView: self.query_one(DetailView),
                FindingsList: self.query_one(FindingsList), TurnTable: self.query_one(TurnTable)}  # fmt: skip
