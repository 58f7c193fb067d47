"""The live grid of a batch: one row per (task, attempt), updated as the episodes run; totals and
pass@k at the top. Enter follows that episode's timeline (Esc comes back), ``c`` cancels the
episode under the cursor, ``C`` (or Esc, Ctrl+C, after asking) every episode; each releases its
sandbox. When the batch has ended the grid stays with each task's pass@k; `e` opens the fleet table over the batch folder,
``r`` still reruns an attempt (the batch's runner starts again for it)."""

from __future__ import annotations

import threading

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer

from smoldata_tui.session.batch import Batch, BatchPlan, EpisodeRun
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.end_call import ask_to_end_call, running_commands
from smoldata_tui.ui.screens.live import ConfirmCancel, ask_then
from smoldata_tui.ui.theme_text import ThemedStatic, themed

TICK_S = 0.5
COLUMNS = (("task", 26), ("attempt", 7), ("stage", 16), ("elapsed", 8), ("steps", 5), ("calls", 5),
           ("last tool", 10), ("findings", 8), ("verdict", 9), ("grade", 22))  # fmt: skip
CANCEL_ALL_QUESTION = ("Cancel every episode of the batch? Each agent is stopped, what it wrote is kept, its sandbox "
                       "released; queued episodes never start.")
ENDED_OFF = frozenset({"cancel_one", "cancel", "concurrency"})  # keys with nothing to act on once it has ended
_VERDICT_STYLE = {"accepted": "$success", "rejected": "$warning", "crashes": "bold $error"}


def pass_at_text(entry: dict) -> str:
    """One task's pass@k (``batch.json``'s ``tasks`` entry), saying how the attempts not graded
    count: as failed, which is why it differs from the fleet table's pass rate (over graded ones)."""
    if not entry["graded"]:
        return "pass@k unknown: no attempt was graded"
    shown = " ".join(f"pass@{k} {value:.2f}" for k, value in entry["pass_at"].items())
    ungraded = entry["attempts"] - entry["graded"]
    if ungraded:
        shown += (f" ({ungraded} not graded, counted as failed: the fleet table's pass rate "
                  f"{entry['passed']}/{entry['graded']} is over the graded ones)")  # fmt: skip
    return shown


class BatchEnded(Message):
    pass


class _CancelEveryEpisode:
    """What the app's stop paths call ``.episode.cancel(reason)`` on: here, the whole batch."""

    def __init__(self, batch: Batch) -> None:
        self._batch = batch

    def cancel(self, reason: str | None = None) -> None:
        self._batch.cancel_all(reason or "cancelled")


class BatchScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "open", "Follow this episode"),
        Binding("c", "cancel_one", "Cancel this episode"),
        Binding("C", "cancel('C')", "Cancel every episode"),
        Binding("a", "attempt_groups", "Attempt groups: what GRPO learns"),
        Binding("e", "fleet", "The fleet table over the batch folder"),
        Binding("r", "requeue", "Run this attempt again (errored or cancelled)"),
        Binding("plus,equals_sign", "concurrency(1)", "One more at once", key_display="+"),
        Binding("minus", "concurrency(-1)", "One fewer at once", key_display="-"),
        Binding("escape", "cancel('Esc')", "Cancel every episode", show=False),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "quit_episode", "Quit"),
    ]
    DEFAULT_CSS = """
    BatchScreen #batch-totals { height: auto; padding: 0 1; background: $panel; }
    BatchScreen DataTable { height: 1fr; margin: 0 1; }
    """

    def __init__(self, plan: BatchPlan) -> None:
        super().__init__()
        self.batch = Batch(plan)
        self.episode = _CancelEveryEpisode(self.batch)  # the LiveApp's stop paths find it here
        self.running = True  # the batch's runner is on: False once it has ended, True again for a rerun
        self.ended = threading.Event()  # the batch's thread is done: every sandbox released
        self.summary: dict | None = None
        self._quit_after = False

    @property
    def table(self) -> DataTable:
        return self.query_one("#batch-grid", DataTable)

    def compose(self) -> ComposeResult:
        yield ThemedStatic(self._totals(), id="batch-totals")
        table: DataTable = DataTable(id="batch-grid", cursor_type="row", zebra_stripes=True)
        for column, width in COLUMNS:
            table.add_column(column, key=column, width=width)
        for run in self.batch.runs:
            table.add_row(*self._cells(run), key=run.key)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        watch = getattr(self.app, "watch_episode", None)
        if watch is not None:
            watch(self)
        self.table.focus()
        self.run_worker(self._run, thread=True, exclusive=True, group="batch", name="batch")
        self.set_interval(TICK_S, self._tick)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._tick())  # cells hold the theme's colours

    def _run(self) -> None:
        try:
            self.summary = self.batch.run()
        finally:
            self.ended.set()
            self.post_message(BatchEnded())

    # --- drawing ------------------------------------------------------------------------------
    def _tick(self) -> None:
        table = self.table
        for run in self.batch.runs:
            for (column, _), cell in zip(COLUMNS, self._cells(run)):
                table.update_cell(run.key, column, cell)
        self.query_one("#batch-totals", ThemedStatic).update(self._totals())

    def _cells(self, run: EpisodeRun) -> list[Text]:
        return [themed(cell, self.app.theme_variables) for cell in self._plain_cells(run)]

    def _plain_cells(self, run: EpisodeRun) -> list[Text]:
        outcome = run.outcome
        progress = run.progress()
        elapsed = run.elapsed_s
        if outcome.state == "ended":
            stage = Text(outcome.status or "", style="bold")
        elif outcome.state == "running":
            stage = Text(run.stage_name or "starting", style="$accent")
        else:
            stage = Text("queued", style="$text-muted")
        # A running episode's partial trace is no verdict: "rejected" would only say it has not ended.
        verdict = outcome.verdict if outcome.state == "ended" else ("running" if outcome.state == "running" else "")
        if outcome.env_reward is not None:
            grade = Text(f"env_reward {outcome.env_reward:g}", style="bold $success" if outcome.passed else "bold $error")
        elif outcome.state == "ended":
            grade = Text(clip(neutralize(outcome.why or "not graded", keep_newlines=False), 60), style="$error")
        else:
            grade = Text("")
        return [
            Text(clip(outcome.task, 26)),
            Text(str(outcome.attempt)),
            stage,
            Text(f"{elapsed:.0f}s" if elapsed is not None else ""),
            Text(str(progress["steps"])),
            Text(str(progress["calls"])),
            Text(clip(neutralize(progress["last_tool"] or "", keep_newlines=False), 10)),
            Text(str(progress["findings"])),
            Text(verdict or "", style=_VERDICT_STYLE.get(verdict or "", "")),
            grade,
        ]

    def _totals(self) -> Text:
        runs = self.batch.runs
        states = [run.outcome.state for run in runs]
        report = self.batch.summary()
        graded = sum(entry["graded"] for entry in report["tasks"].values())
        passed = sum(entry["passed"] for entry in report["tasks"].values())
        text = Text()
        text.append(f"{len(runs)} episodes", style="bold")
        text.append(f" · {self.batch.concurrency} at once · running {states.count('running')} · "
                    f"queued {states.count('queued')} · ended {states.count('ended')} · graded {graded} · "
                    f"passed {passed} · failed {len(report['failed'])}")  # fmt: skip
        text.append(f"   {clip(str(self.batch.folder), 80)}", style="$text-muted")
        for task, entry in report["tasks"].items():
            # pass@k over the attempts that have ended would move as episodes end: shown once all have
            done = all(run.outcome.state == "ended" for run in runs if run.outcome.task == task)
            text.append(f"\n  {clip(task, 30)}: {entry['passed']}/{entry['attempts']} passed · ")
            text.append(pass_at_text(entry) if done else "pass@k when all have ended")
        if self.batch.stop_reason:
            text.append(f"\n  cancelling every episode ({clip(self.batch.stop_reason, 60)})…", style="$warning")
        return text

    # --- actions ------------------------------------------------------------------------------
    def _current(self) -> EpisodeRun | None:
        if not self.batch.runs:
            return None
        return self.batch.runs[min(self.table.cursor_row, len(self.batch.runs) - 1)]

    def action_help(self) -> None:
        from smoldata_tui.ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Batch", BatchScreen)]

    def action_open(self) -> None:
        run = self._current()
        if run is None or run.trace_path is None:
            self.app.bell()
            return
        live = run.outcome.state != "ended"
        screen = self.app.open_episode(run.trace_path, follow=live, from_picker=True)
        if live:  # K and the running-call row, as on a single run's timeline (the episode read when asked)
            screen.process_probe = lambda: running_commands(run.episode)
            screen.call_ender = lambda: self.run_worker(lambda: ask_to_end_call(self.app, run.episode), thread=True,
                                                        group="end-call", exclusive=True)  # fmt: skip

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # the table takes Enter for itself: it means "follow this episode" here
        self.action_open()

    def action_attempt_groups(self) -> None:
        """The groups of the episodes saved so far (rewards of running ones are not known yet)."""
        self.app.open_groups(folder=self.batch.folder)

    def action_requeue(self) -> None:
        """Run the attempt under the cursor again; after the batch has ended its runner starts again
        for it (the grid runs until it ends, as at first)."""
        run = self._current()
        if run is None:
            self.app.bell()
            return
        refused = self.batch.requeue(run.key)
        if refused is not None:
            self.app.notify(refused, severity="warning", markup=False)
        else:
            self.app.notify(f"{run.key} queued again; its last try is kept in .requeued/", markup=False)
            if not self.running:
                self._restart()
        self._tick()

    def _restart(self) -> None:
        self.running = True
        self.summary = None
        self.ended.clear()
        self.run_worker(self._run, thread=True, exclusive=True, group="batch", name="batch")
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Once the batch has ended nothing runs: the keys that act on running episodes leave the
        footer, ``?`` and the palette (``r`` stays: it starts the batch's runner again)."""
        if action in ENDED_OFF and not self.running:
            return False
        return super().check_action(action, parameters)

    def action_concurrency(self, change: int) -> None:
        wanted = self.batch.concurrency + change
        if wanted < 1 or not self.running:
            self.app.bell()
            return
        self.batch.set_concurrency(wanted)
        self._tick()

    def action_cancel_one(self) -> None:
        run = self._current()
        if run is None or run.outcome.state == "ended":
            self.app.bell()
            return
        self.batch.cancel(run.key, "c (cancel this episode)")
        self.notify(f"cancelling {run.key}", markup=False)

    def action_cancel(self, key: str = "Esc") -> None:
        if not self.running:
            return

        def cancel() -> None:
            self.batch.cancel_all(f"{key} (cancel confirmed)")
            self._tick()

        ask_then(self.app, ConfirmCancel(CANCEL_ALL_QUESTION, yes="Cancel every episode (y)"), cancel)

    def action_quit_episode(self, reason: str = "q (quit)") -> None:
        if not self.running:
            self.app.exit()
            return
        self._quit_after = True
        self.batch.cancel_all(reason)
        self._tick()

    def on_batch_ended(self, _message: BatchEnded) -> None:
        """The grid stays, with each task's pass@k: ``e`` opens the fleet table over the batch folder
        (Esc comes back), ``a`` its attempt groups."""
        self.running = False
        if self._quit_after:
            self.app.exit()
            return
        if any(run.outcome.state == "queued" for run in self.batch.runs):
            self._restart()  # `r` came as the runner ended: its attempt waits for the runner again
            return
        self.refresh_bindings()
        self._tick()
        self.app.notify("the batch has ended: e opens the fleet table over its folder, a its attempt groups, "
                        "r reruns an attempt that errored or was cancelled, q quits", title="batch ended")  # fmt: skip

    def action_fleet(self) -> None:
        self.app.open_fleet(self.batch.folder, standalone=False)
