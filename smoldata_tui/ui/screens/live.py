"""The live episode: stage progress while a task runs, then its timeline, then its grade.

The episode runs in a worker thread (:class:`~smoldata_tui.session.episode.Episode`); its
observer posts messages here, which is thread-safe. When the agent starts, the episode
screen opens on the run's trace file in follow mode: live and replay are one path. Esc on
the timeline comes back to the stages. Cancelling asks first, stops the agent, keeps what
was received and releases the sandbox; quitting during a run does the same.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Log, Static

from smoldata_tui.session.episode import Episode, EpisodeResult, EpisodeSpec, stages_for
from smoldata_tui.replay.divergence import describe_divergence
from smoldata_tui.masking import SecretScrubber
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.confirm import ConfirmCancel, ask_then  # batch and fork_launch take them from here
from smoldata_tui.ui.screens.end_call import ask_to_end_call, running_commands
from smoldata_tui.ui.screens.quit_or_back import QUIT_OR_BACK, QuitOrBack
from smoldata_tui.ui.theme_text import ThemedStatic, themed

TICK_S = 1.0  # elapsed times move at least this often

_STATE_STYLE = {"started": "bold $accent", "progress": "$accent", "done": "$success", "failed": "bold $error", "skipped": "dim"}


class StageChanged(Message):
    def __init__(self, name: str, state: str, elapsed_s: float, message: str) -> None:
        super().__init__()
        self.name, self.state, self.elapsed_s, self.message = name, state, elapsed_s, message


class TraceOpened(Message):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class EpisodeEnded(Message):
    def __init__(self, result: EpisodeResult | None, error: str | None = None) -> None:
        super().__init__()
        self.result, self.error = result, error


class _Observer:
    """The runner's observer: every call becomes a message to the screen (from the worker thread)."""

    def __init__(self, screen: LiveScreen) -> None:
        self.screen = screen

    def opened(self, trace_path: Path) -> None:
        self.screen.post_message(TraceOpened(trace_path))

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        self.screen.post_message(StageChanged(name, state, elapsed_s, message))

    def received(self, data: bytes) -> None:
        # The timeline follows the trace file itself; this only saves it waiting for its next poll.
        follower = self.screen.follower
        if follower is not None:
            follower.wake()


class LiveScreen(QuitOrBack, Screen[None]):
    BINDINGS = [
        Binding("enter,t", "timeline", "Timeline"),
        Binding("escape", "cancel", "Cancel the episode"),  # Ctrl+C: the app's binding, on every screen
        Binding("K", "end_call", "End the running tool call (the agent goes on)"),
        Binding("question_mark", "help", "Keys"),
        *QUIT_OR_BACK,
    ]
    DEFAULT_CSS = """
    LiveScreen #live-header { height: auto; padding: 0 1; background: $panel; }
    LiveScreen DataTable { height: auto; max-height: 12; margin: 1 1; }
    LiveScreen #live-outcome { height: auto; padding: 0 1; }
    LiveScreen #stage-log { height: 1fr; min-height: 4; margin: 0 1; border: round $panel; border-title-color: $foreground; }
    """

    def __init__(self, spec: EpisodeSpec, *, back_on_quit: bool = False) -> None:
        """``back_on_quit``: opened from another screen (home's launch form), ``q`` goes back there."""
        super().__init__()
        self.spec = spec
        self.back_on_quit = back_on_quit
        self.stages = stages_for(spec.backend, spec.harness, capture=spec.capture)
        self.episode = Episode(spec, _Observer(self))
        self.trace_path: Path | None = None
        self.result: EpisodeResult | None = None
        self.running = True
        self._quit_after = False
        self._back_after = False  # q's cancel confirmed: back to the screen below once the episode has stopped
        self._started = time.monotonic()
        self._timeline_shown = False
        self.follower = None  # the open timeline's TraceFollower, woken when new bytes arrive
        self.ended = threading.Event()  # the runner's thread is done: sandbox released, metadata saved
        self._stage_started: dict[str, float] = {}  # stages running now -> when they started (monotonic)
        self._stage_painted: dict[str, tuple[str, str]] = {}  # stage -> (state, what happened) as shown
        self._stage_ended: dict[str, str] = {}  # stages that ended -> how (done, failed, skipped)
        self._scrubber = SecretScrubber(spec.endpoint.secrets)
        self.divergences: list[str] = []  # one line per divergence of a replay, as they happen

    def compose(self) -> ComposeResult:
        yield ThemedStatic(self._header(), id="live-header")
        table: DataTable = DataTable(cursor_type="none", zebra_stripes=True)
        for column, width in (("stage", 18), ("state", 9), ("elapsed", 8), ("what happened", 90)):
            table.add_column(column, key=column, width=width)
        for name in self.stages:
            table.add_row(Text(name), Text("waiting", style="dim"), Text(""), Text(""), key=name)
        yield table
        yield ThemedStatic(Text("The timeline opens when the agent starts (Enter or t to open it)."), id="live-outcome")
        log = Log(id="stage-log", max_lines=5000)
        log.border_title = "stage log"
        yield log
        yield Footer()

    def on_mount(self) -> None:
        watch = getattr(self.app, "watch_episode", None)
        if watch is not None:
            watch(self)  # the app stops it on every way out, even once this screen is gone
        self.run_worker(self._run, thread=True, exclusive=True, group="episode", name="episode")
        self.set_interval(TICK_S, self._tick)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._repaint_stages())

    def _tick(self) -> None:
        """Elapsed times keep moving while nothing is said (a long tool call, a slow model)."""
        if not self.running:
            return
        now = time.monotonic()
        table = self.query_one(DataTable)
        for name, started in self._stage_started.items():
            table.update_cell(name, "elapsed", Text(f"{now - started:.0f}s"))
        self._check_divergences()
        self.query_one("#live-header", Static).update(self._header())

    def _check_divergences(self) -> None:
        records = self.spec.endpoint.divergences()  # the replay model's, as they happen ([] otherwise)
        if len(records) == len(self.divergences):
            return
        for record in records[len(self.divergences) :]:
            line = self._scrubber.text(describe_divergence(record))
            self.divergences.append(line)
            self._log_line(f"replay diverged: {line}")

    def _run(self) -> None:
        try:
            result = self.episode.run()
        except BaseException as exc:  # noqa: BLE001 - shown, never a traceback on screen
            self.result = None
            self.post_message(EpisodeEnded(None, clip(f"{type(exc).__name__}: {exc}", 300)))
            return
        finally:
            self.ended.set()
        self.result = result  # readable after the app has exited and its screens are gone
        self.post_message(EpisodeEnded(result))

    # --- what the runner says -----------------------------------------------------------------
    def _paint_stage(self, name: str, state: str, said: str, *, state_shown: bool = True) -> None:
        """A stage's state and what happened, in the current theme's colours (kept, for a theme switch)."""
        shown = self._stage_painted.get(name, ("waiting", ""))
        state_text = state if state_shown else shown[0]
        said = said or shown[1]
        self._stage_painted[name] = (state_text, said)
        table, variables = self.query_one(DataTable), self.app.theme_variables
        table.update_cell(name, "state", themed(Text(state_text, style=_STATE_STYLE.get(state_text, "")), variables))
        if said:
            table.update_cell(name, "what happened", themed(Text(clip(said, 120), style=_STATE_STYLE.get(state, "")), variables))

    def _repaint_stages(self) -> None:
        for name, (state, said) in list(self._stage_painted.items()):
            self._paint_stage(name, state, said)

    def on_stage_changed(self, message: StageChanged) -> None:
        table = self.query_one(DataTable)
        self._log_stage(message)
        if message.name not in self.stages:
            self.app.notify(clip(f"{message.name}: {message.state} {message.message}", 200), severity="warning", markup=False)
            return
        ended = self._stage_ended
        if message.state == "progress" and message.name in ended:  # after its end (the capture's export): said, state kept
            if message.message:
                self._paint_stage(message.name, ended[message.name], message.message, state_shown=False)
            return
        if message.state in ("done", "failed", "skipped"):
            ended[message.name] = message.state
        if message.state in ("started", "progress"):
            self._stage_started.setdefault(message.name, time.monotonic() - message.elapsed_s)
        else:
            self._stage_started.pop(message.name, None)
        self._paint_stage(message.name, message.state, message.message)
        table.update_cell(message.name, "elapsed", Text(f"{message.elapsed_s:.1f}s"))
        if message.name == "agent running" and message.state == "started":
            self.action_timeline()

    def _log_stage(self, message: StageChanged) -> None:
        """Every stage message, in order: build logs, retries and errors stay readable after the
        table's cell has moved on. Retries also pop up while the timeline covers this screen."""
        if message.state == "progress" and not message.message:
            return
        text = message.message or message.state
        line = f"{message.elapsed_s:7.1f}s  {message.name}: {text}" if message.message else f"{message.name}: {text}"
        self._log_line(line)
        if message.message.startswith("Daytona") and self._timeline_shown and self.app.screen is not self:
            self.app.notify(clip(neutralize(message.message, keep_newlines=False), 200), severity="warning", markup=False)

    def _log_line(self, line: str) -> None:
        self.query_one("#stage-log", Log).write_line(neutralize(clip(line, 400), keep_newlines=False))

    def on_trace_opened(self, message: TraceOpened) -> None:
        self.trace_path = message.path
        self.query_one("#live-header", Static).update(self._header())

    def on_episode_ended(self, message: EpisodeEnded) -> None:
        self.running = False
        self.result = message.result
        self._stage_started.clear()
        if message.result is not None:  # the final list, scrubbed by the episode
            self.divergences = [describe_divergence(record) for record in message.result.divergences]
        self.query_one("#live-header", Static).update(self._header())
        self.query_one("#live-outcome", Static).update(self._outcome(message))
        if self._quit_after:
            self.app.exit()
        elif self._back_after:
            self._go_back()

    # --- actions ----------------------------------------------------------------------------
    def action_help(self) -> None:
        from smoldata_tui.ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Live episode", LiveScreen)]

    def action_timeline(self) -> None:
        if self.trace_path is None or self._timeline_shown:
            return
        self._timeline_shown = True
        timeline = self.app.open_episode(self.trace_path, follow=True, from_picker=True,
                                         callback=self._timeline_closed)  # fmt: skip
        timeline.process_probe = self._running_commands
        timeline.call_ender = self.action_end_call
        self.call_after_refresh(self._find_follower, timeline)

    def _running_commands(self) -> list:
        """The shell-tool commands running in the sandbox now (called from a worker thread)."""
        return running_commands(self.episode if self.running else None)

    def _find_follower(self, timeline) -> None:
        from smoldata_tui.ui.trace_follower import TraceFollower

        followers = timeline.query(TraceFollower)
        if followers:
            self.follower = followers.first()
        elif timeline.is_attached:
            self.call_after_refresh(self._find_follower, timeline)

    def _timeline_closed(self, _result: object = None) -> None:
        self._timeline_shown = False
        self.follower = None

    def action_cancel(self, key: str = "Esc", *, then_back: bool = False) -> None:
        if not self.running:
            return

        def cancel() -> None:
            self._back_after = then_back
            self.episode.cancel(f"{key} (cancel confirmed)")
            self.query_one("#live-outcome", Static).update(Text("cancelling: stopping the agent…", style="$warning"))

        ask_then(self.app, ConfirmCancel(), cancel)

    @work(thread=True, exclusive=True, group="end-call")
    def action_end_call(self) -> None:
        """Ask, naming the command, then end the shell-tool command the agent is running now: a
        hung call. OpenCode's tool returns with the signal's status and the agent goes on."""
        ask_to_end_call(self.app, self.episode if self.running else None)

    def q_quits(self) -> bool:
        return not self.back_on_quit

    def action_leave(self, _label: str = "") -> None:
        """q: opened from another screen, back to it once the episode has stopped (a running one is
        cancelled after the cancel's own question); otherwise quit, as Ctrl+Q does."""
        if not self.back_on_quit:
            self.action_quit_episode()
        elif self.running:
            self.action_cancel("q", then_back=True)
        else:
            self._go_back()

    def _go_back(self) -> None:
        """Close this screen and whatever was opened over it (the timeline, a dialog)."""
        while self in self.app.screen_stack and self.app.screen is not self:
            self.app.pop_screen()
        if self.app.screen is self:
            self.dismiss(None)

    def action_quit_episode(self, reason: str = "q (quit)") -> None:
        if not self.running:
            self.app.exit()
            return
        self._quit_after = True
        self.episode.cancel(reason)
        self.query_one("#live-outcome", Static).update(
            Text("quitting: stopping the agent, saving, releasing the sandbox…", style="$warning")
        )

    # --- text -------------------------------------------------------------------------------
    def _header(self) -> Text:
        spec = self.spec
        status = "running" if self.running else (self.result.status if self.result else "failed")
        text = Text()
        text.append(f"{spec.task.name}", style="bold")
        text.append(f"  model {clip(spec.endpoint.label, 60)}  backend {spec.backend}  ")
        text.append(status, style="bold $accent" if self.running else "bold")
        if self.running:
            text.append(f"  elapsed {format_duration((time.monotonic() - self._started) * 1000) or '0s'}")
        text.append_text(self._capture_words())
        if self.divergences:
            text.append(f"  replay diverged ({len(self.divergences)})", style="bold $warning")
        if self.trace_path is not None:
            text.append(f"  saving to {clip(str(self.trace_path.parent), 80)}", style="dim")
        return text

    def _capture_words(self) -> Text:
        """Whether training's capture proxy is in the path, and its level once the probe settled it."""
        spec = self.spec
        if spec.harness == "opencode-env":
            return Text("  capture: opencode_env's proxy", style="dim")
        if not spec.capture:
            return Text("  capture off", style="$warning")
        level = self.episode.capture_level
        if level is None:
            return Text("  capture: probing" if self.running else "  capture: not started", style="dim")
        trainable = level == "tokens"
        return Text(f"  capture {level} ({'trainable' if trainable else 'not trainable'})",
                    style="$success" if trainable else "bold $warning")

    def _outcome(self, message: EpisodeEnded) -> Text:
        result = message.result
        if result is None:
            return Text(f"the episode could not run: {message.error}", style="bold $error")
        text = Text()
        text.append(f"{result.status}", style="bold")
        text.append(f" · exit code {result.exit_code}")
        if result.grade is not None:
            if result.grade.grader_error:
                text.append(f" · grader failed: {clip(result.grade.grader_error, 100)}", style="bold $error")
            else:
                text.append(f" · env_reward {result.grade.env_reward:g}", style="bold $success" if result.grade.env_reward else "bold $error")
        if result.recovered:
            text.append(f" · {len(result.recovered)} unfinished call(s) recovered from opencode export", style="$warning")
        if self.divergences:
            text.append(f" · the replay diverged from its recording {len(self.divergences)} time(s):", style="bold $warning")
            for line in self.divergences[:5]:
                text.append(f"\n    ! {clip(line, 150)}", style="$warning")
            if len(self.divergences) > 5:
                text.append(f"\n    … {len(self.divergences) - 5} more in the timeline's Episode tab", style="$warning")
            text.append("\n")
        if result.error is not None:
            text.append(f" · {clip(str(result.error), 160)}", style="$error")
        text.append(f"   (t: timeline, q: {'back' if self.back_on_quit else 'quit'})", style="dim")
        return text
