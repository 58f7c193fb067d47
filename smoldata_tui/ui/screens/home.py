"""``smoldata-tui`` without arguments: the task set and the saved episodes.

Enter on a task opens the launch form (backend, model, endpoint, timeout, harness, capture), which
starts the live episode, whose ``q`` comes back here. ``e`` opens the saved episodes in the fleet
table; the folder field (``f``) lists another task set; ``?`` lists the keys.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Input, Label, Select, Static
from textual.worker import get_current_worker

from smoldata_tui.fleet.listing import walk_traces
from smoldata_tui.sandbox.daytona.settings import DaytonaCredentialsMissing, has_api_key
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.store.metadata import METADATA_SUFFIX, effective_status, sibling_path
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.replay.model_endpoint import EndpointError, open_endpoint
from smoldata_tui.session.opencode_env_harness import opencode_env_available
from smoldata_tui.tasks import Task, TaskError, load_task_set
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.training.sampling import SamplingError, parse_sampling
from smoldata_tui.ui.screens.help import HelpScreen
from smoldata_tui.ui.screens.modal_form import ModalForm
from smoldata_tui.ui.theme_text import ThemedStatic


def count_saved_episodes(runs: Path) -> tuple[int, int]:
    """(episodes, interrupted ones) below ``runs``: the episodes the fleet table (``e``) lists, at any
    depth, so a batch's ``<batch>/<task>-N/run.jsonl`` counts. It reads every ``run.meta.json``:
    half a second for 10,000 episodes, so it runs off the UI thread."""
    if not runs.is_dir():
        return 0, 0
    episodes = [trace for trace in walk_traces(str(runs)) if trace.special is None]  # as fleet.index.scan lists them
    interrupted = sum(
        effective_status(load_metadata(sibling_path(episode.path, METADATA_SUFFIX))) == "interrupted"
        for episode in episodes
    )
    return len(episodes), interrupted


class HomeScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "launch", "Run the task"),
        Binding("e", "episodes", "Saved episodes"),
        Binding("f", "folder", "Task folder"),
        Binding("escape", "tasks", "Back to the task list", show=False),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "app.quit", "Quit"),
    ]
    AUTO_FOCUS = "DataTable"  # the keys above, not the folder field, take what is typed first
    DEFAULT_CSS = """
    HomeScreen > #home-title { height: 1; padding: 0 1; background: $panel; }
    HomeScreen > DataTable { height: 1fr; }
    HomeScreen > #home-folder { height: 1; padding: 0 1; }
    HomeScreen #home-folder > Label { width: auto; padding-right: 1; }
    HomeScreen #home-tasks { width: 1fr; }
    HomeScreen > #home-folder-error { height: auto; padding: 0 1; }
    HomeScreen > #home-episodes { height: auto; padding: 0 1; }
    """

    def __init__(self, tasks_root: Path | None, runs: Path) -> None:
        super().__init__()
        self.tasks_root = tasks_root
        self.runs = runs
        self.tasks: list[Task] = []
        self.problem: str | None = None
        self.saved: tuple[int, int] | None = None  # (episodes, interrupted) as last counted; None: counting

    def compose(self) -> ComposeResult:
        try:
            self.tasks = load_task_set(self.tasks_root)
        except TaskError as exc:
            self.problem = clip(str(exc), 300)
        yield ThemedStatic(self._title(), id="home-title")
        table: DataTable = DataTable(cursor_type="row", zebra_stripes=True)
        for column, width in (("task", 26), ("tier", 8), ("category", 16), ("data", 12), ("instruction", 80)):
            table.add_column(column, key=column, width=width)
        yield table
        with Horizontal(id="home-folder"):
            yield Label("task folder (f)")
            yield Input(str(self.tasks_root or ""), placeholder="empty: the sample tasks; Enter lists the tasks of a folder",
                        id="home-tasks", compact=True)  # fmt: skip
        yield ThemedStatic("", id="home-folder-error")
        yield ThemedStatic(self._episodes_line(), id="home-episodes")
        yield Footer()

    def on_mount(self) -> None:
        self._fill_table()

    @work(thread=True, exclusive=True, group="home-episodes")
    def _count_episodes(self, then_open: bool = False) -> None:
        counted = count_saved_episodes(self.runs)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._counted, counted, then_open)

    def _counted(self, counted: tuple[int, int], then_open: bool) -> None:
        self.saved = counted
        self.query_one("#home-episodes", Static).update(self._episodes_line())
        if then_open:
            self._open_episodes()

    def _title(self) -> Text:
        where = self.tasks_root or "the sample tasks that ship with smoldata-tui"
        return Text(f"tasks in {clip(str(where), 100)}  (Enter runs one, e browses saved episodes, ? lists the keys)")

    def _fill_table(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for task in self.tasks:
            table.add_row(
                Text(task.name), Text(str(task.difficulty_tier or "")), Text(str(task.category or "")),
                Text(task.data_source), Text(clip(task.summary, 200)), key=task.name,
            )  # fmt: skip

    def _episodes_line(self) -> Text:
        if self.problem:
            return Text(f"the task set cannot be read: {self.problem}", style="bold $error")
        where = clip(str(self.runs), 80)
        if self.saved is None:
            return Text(f"counting the saved episodes in {where}\u2026", style="dim")
        count, interrupted = self.saved
        text = Text(f"{count} saved episode{'s' if count != 1 else ''} in {where}", style="dim")
        if interrupted:  # their process died mid-run (SIGKILL, a crash): never finished, never graded
            text.append(f"  {interrupted} interrupted (smoldata-tui local gc tidies their sandboxes)", style="bold $warning")
        return text

    def current_task(self) -> Task | None:
        table = self.query_one(DataTable)
        if not self.tasks or table.cursor_row is None or not 0 <= table.cursor_row < len(self.tasks):
            return None
        return self.tasks[table.cursor_row]

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_launch()

    def action_launch(self) -> None:
        task = self.current_task()
        if task is not None:
            self.app.push_screen(LaunchForm(task, self.runs))

    def action_episodes(self) -> None:
        if self.saved is None or self.saved[0] == 0:  # still counting, or none when last counted: count now
            self._count_episodes(then_open=True)
        else:
            self._open_episodes()

    def _open_episodes(self) -> None:
        if self.saved is None or self.saved[0] == 0:
            self.app.notify(f"no saved episodes in {clip(str(self.runs), 80)} yet", markup=False)
            return
        self.app.open_fleet(self.runs, standalone=False)

    def action_folder(self) -> None:
        self.query_one("#home-tasks", Input).focus()

    def action_tasks(self) -> None:
        self.query_one(DataTable).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "home-tasks":
            event.stop()
            self.load_folder(event.value.strip())

    def load_folder(self, typed: str) -> None:
        """List the task set in the folder ``typed`` (empty: the shipped samples); a folder that
        holds no readable task set is said under the field, and the list shown stays."""
        folder = Path(typed).expanduser() if typed else None
        error = self.query_one("#home-folder-error", Static)
        try:
            tasks = load_task_set(folder)
        except TaskError as exc:
            kept = f"still listing {clip(str(self.tasks_root or 'the sample tasks'), 80)}"
            error.update(Text(f"{clip(neutralize(str(exc)), 300)} ({kept})", style="bold $error"))
            return
        self.tasks_root, self.tasks, self.problem = folder, tasks, None
        error.update("")
        self.query_one("#home-title", Static).update(self._title())
        self.query_one("#home-episodes", Static).update(self._episodes_line())
        self._fill_table()
        self.action_tasks()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self))

    def help_sections(self) -> list[tuple[str, type]]:
        return [("Home", HomeScreen)]

    def on_screen_resume(self) -> None:  # shown first, or again: a run since may have saved more
        self._count_episodes()


# The endpoint's messages speak to the command line; the form names its own fields instead.
_FLAG_WORDS = (
    ("pass --model NAME (or --model replay:TRACE to replay a recorded episode)",
     "fill in the model field (a model name, or replay:TRACE to replay a recorded episode)", "model"),
    ("pass --base-url URL or set SANDBOX_VLLM_URL", "fill in the base URL field or set SANDBOX_VLLM_URL", "base-url"),
    ("pass --api-key KEY or set SANDBOX_VLLM_KEY", "fill in the API key field or set SANDBOX_VLLM_KEY", "api-key"),
)


def form_words(message: str) -> tuple[str, str | None]:
    """``message`` with command-line flags replaced by the form's field names, and that field's id."""
    for flag_words, field_words, field in _FLAG_WORDS:
        if flag_words in message:
            return message.replace(flag_words, field_words), field
    if message.startswith("replay:"):
        return "model field: " + message, "model"
    return message, None


class LaunchForm(ModalForm):
    """Backend, model, endpoint, timeout, harness, capture. The key field is a password field, never echoed."""

    START_BUTTON = "run"
    # One row a field (compact widgets, the hint in each placeholder) and the buttons outside the
    # fields' scroll area, so that 80x24 shows the task, every field and Run at once.
    DEFAULT_CSS = """
    LaunchForm { align: center middle; }
    LaunchForm > #launch { width: 100; max-width: 100%; height: auto; max-height: 100%;
                           padding: 0 1; border: thick $accent; background: $surface; }
    LaunchForm #launch-fields { height: auto; max-height: 1fr; }
    LaunchForm #launch-grid { grid-size: 2; grid-columns: 11 1fr; grid-rows: 1; grid-gutter: 1 1; height: auto; }
    LaunchForm #launch-error { color: $error; height: auto; }
    LaunchForm #launch-buttons { height: auto; margin-top: 1; }
    """

    def __init__(self, task: Task, runs: Path) -> None:
        super().__init__()
        self.launch_task = task
        self.runs = runs

    def compose(self) -> ComposeResult:
        harnesses = [("built-in driver (opencode_env's configuration)", "builtin")]
        if opencode_env_available():
            harnesses.append(("opencode_env's OpenCodeSessionFactory, with its logging proxy", "opencode-env"))
        with Vertical(id="launch"):
            yield Label(Text(f"Run {self.launch_task.name}", style="bold"))
            with VerticalScroll(id="launch-fields"), Grid(id="launch-grid"):
                yield Label("backend")
                yield Select([("local (bubblewrap)", "local"), ("daytona (needs DAYTONA_API_KEY)", "daytona")],
                             value="local", allow_blank=False, id="backend", compact=True)  # fmt: skip
                yield Label("model")
                yield Input(placeholder="a name at the endpoint, or replay:TRACE (the replay model)", id="model",
                            compact=True)  # fmt: skip
                yield Label("base URL")
                yield Input(placeholder=os.environ.get("SANDBOX_VLLM_URL", "") and "empty: $SANDBOX_VLLM_URL + /v1"
                            or "empty: $SANDBOX_VLLM_URL + /v1", id="base-url", compact=True)  # fmt: skip
                yield Label("API key")
                yield Input(placeholder="empty: $SANDBOX_VLLM_KEY (never shown or saved)", password=True, id="api-key",
                            compact=True)  # fmt: skip
                yield Label("timeout, s")
                yield Input("600", id="timeout", type="number", compact=True)
                yield Label("harness")
                yield Select(harnesses, value="builtin", allow_blank=False, id="harness", compact=True)
                yield Label("capture")
                yield Select([("on: openenv's capture proxy, training's policy (run.training.json)", "on"),
                              ("off: OpenCode talks straight to the endpoint, as --no-capture", "off")],
                             value="on", allow_blank=False, id="capture", compact=True)  # fmt: skip
                yield Label("sampling")
                yield Input(placeholder="empty: the engine's defaults; training's policy: temperature=T", id="sampling",
                            compact=True)  # fmt: skip
            yield ThemedStatic("", id="launch-error")
            with Horizontal(id="launch-buttons"):
                yield Button("Run", id="run", variant="primary")
                yield Button("Back", id="back")

    def action_start(self) -> None:
        value = {name: self.query_one(f"#{name}", Input).value.strip() for name in ("model", "base-url", "api-key", "timeout")}
        try:
            timeout = float(value["timeout"] or 600)
            if not (math.isfinite(timeout) and timeout > 0):  # nan and inf parse as floats
                raise ValueError
        except ValueError:
            self._error("the timeout field must hold a positive number of seconds")
            self.query_one("#timeout", Input).focus()
            return
        backend = str(self.query_one("#backend", Select).value)
        if backend == "daytona" and not has_api_key():
            self._error(str(DaytonaCredentialsMissing()))
            return
        try:
            endpoint = open_endpoint(
                model=value["model"] or None, base_url=value["base-url"] or None, api_key=value["api-key"] or None
            )
        except EndpointError as exc:
            message, field = form_words(str(exc))
            self._error(message)
            if field:
                self.query_one(f"#{field}", Input).focus()
            return
        harness = str(self.query_one("#harness", Select).value)
        capture = self.query_one("#capture", Select).value == "on"
        try:
            sampling = self._sampling(capture and harness == "builtin")
        except SamplingError as exc:
            endpoint.close()
            self._error(str(exc).replace("--sampling", "sampling field", 1))
            self.query_one("#sampling", Input).focus()
            return
        spec = EpisodeSpec(task=self.launch_task, endpoint=endpoint, backend=backend, timeout_s=timeout,
                           save_dir=self.runs, harness=harness, capture=capture, sampling=sampling)  # fmt: skip
        self.dismiss(None)
        self.app.open_live(spec)

    def _sampling(self, through_capture: bool) -> dict | None:
        """Training's policy from the sampling field (as ``--sampling``); only the capture proxy applies it."""
        raw = self.query_one("#sampling", Input).value.strip()
        if raw and not through_capture:
            raise SamplingError("--sampling is applied by the capture proxy: set capture on with the built-in driver")
        return parse_sampling([raw]) if raw else None

    def _error(self, message: str) -> None:
        self.query_one("#launch-error", Static).update(Text(clip(message, 300)))
