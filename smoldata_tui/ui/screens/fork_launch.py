"""``F`` on a timeline row: fork the episode at that row's step, live.

A confirmation names the step; a small form asks for the model (the parent's by default), its URL
and key; then the fork runs on the live screen like any run (replay/fork.py does the work).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.live import ConfirmCancel, LiveScreen
from smoldata_tui.ui.screens.modal_form import ModalForm
from smoldata_tui.ui.theme_text import ThemedStatic

FORK_TIMEOUT_S = 600.0  # as `run`'s default


class ConfirmFork(ConfirmCancel):
    # A fork stops nothing, so no warning colour; and red (solarized) or the primary blue
    # (textual-dark), focused and so reversed, read under 4.5:1.
    YES_VARIANT = "default"
    DEFAULT_CSS = """
    ConfirmFork { align: center middle; }
    ConfirmFork #confirm { width: 70; height: auto; padding: 1 2; border: thick $primary; background: $surface; }
    ConfirmFork Horizontal { height: auto; margin-top: 1; }
    """


NO_TASK = "no run.meta.json names the parent's task: fork it with `smoldata-tui run --fork … --task NAME`"


def ask_to_fork(screen) -> None:
    """From the episode screen: the cursor row's step, confirmed, then the form."""
    from smoldata_tui.replay.fork import ForkError, check_step, load_parent

    event = screen.timeline.cursor_event
    if event is None:
        screen.app.notify("no row selected: put the cursor on the step to fork at", severity="warning")
        return
    step = max(1, screen.model.record(event).step)  # rows before the first step_start belong to step 1
    try:
        parent = load_parent(screen.path)
        check_step(parent, step)
    except ForkError as exc:
        screen.app.notify(clip(neutralize(str(exc), keep_newlines=False), 300), severity="warning", markup=False)
        return
    if not parent.task:  # said now, not after the question and the form
        screen.app.notify(NO_TASK, severity="warning", markup=False)
        return
    question = ConfirmFork(
        f"Fork this episode at step {step}? Steps 1-{step - 1} replay its recording, then the model you choose "
        f"answers from step {step} on, in a new live episode." if step > 1 else
        "Fork this episode at step 1? The model you choose answers every step, in a new live episode.",
        yes=f"Fork at step {step} (y)", no="Back (n)")  # fmt: skip
    screen.app.push_screen(question, lambda yes: screen.app.push_screen(ForkForm(parent, step)) if yes else None)


class ForkForm(ModalForm):
    START_BUTTON = "fork"
    DEFAULT_CSS = """
    ForkForm { align: center middle; }
    ForkForm > Vertical { width: 80; height: auto; padding: 1 2; border: thick $primary; background: $surface; }
    ForkForm Horizontal { height: auto; margin-top: 1; }
    """

    def __init__(self, parent, step: int) -> None:
        super().__init__()
        self.parent_episode, self.step = parent, step

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Fork {clip(str(self.parent_episode.trace), 60)} at step {self.step}", style="bold"))
            yield Label("model from this step on (a name at the endpoint, or replay:TRACE)")
            yield Input(self.parent_episode.model or "", id="model")
            yield Label("base URL (empty: $SANDBOX_VLLM_URL + /v1)")
            yield Input(id="base-url")
            yield Label("API key (empty: $SANDBOX_VLLM_KEY; never shown or saved)")
            yield Input(password=True, id="api-key")
            yield ThemedStatic("", id="fork-error")
            with Horizontal():
                yield Button("Fork", id="fork", variant="primary")
                yield Button("Back", id="back")

    def action_start(self) -> None:
        from smoldata_tui.session.episode import EpisodeSpec
        from smoldata_tui.replay.fork import open_fork_endpoint
        from smoldata_tui.replay.model_endpoint import EndpointError
        from smoldata_tui.tasks import TaskError
        from smoldata_tui.tasks.listing import find_task

        value = {name: self.query_one(f"#{name}", Input).value.strip() for name in ("model", "base-url", "api-key")}
        if not self.parent_episode.task:
            self._error(NO_TASK)
            return
        try:
            task = find_task(self.parent_episode.task, None)
            endpoint = open_fork_endpoint(self.parent_episode, self.step, model=value["model"] or None,
                                          base_url=value["base-url"] or None, api_key=value["api-key"] or None)  # fmt: skip
        except (TaskError, EndpointError) as exc:
            self._error(str(exc))
            return
        runs = getattr(self.app, "runs", None) or Path("runs")
        spec = EpisodeSpec(task=task, endpoint=endpoint, timeout_s=FORK_TIMEOUT_S, save_dir=Path(runs))
        self.dismiss(None)
        self.app.push_screen(ForkLiveScreen(spec, self.parent_episode.trace))

    def _error(self, message: str) -> None:
        self.query_one("#fork-error", Static).update(Text(clip(neutralize(message, keep_newlines=False), 300)))


class ForkLiveScreen(LiveScreen):
    """The live screen of a fork: once it ends, the diff against its parent opens (``d`` again)."""

    BINDINGS = [Binding("d", "diff_parent", "Diff against the parent")]

    def __init__(self, spec, parent_trace: Path) -> None:
        super().__init__(spec)
        self.parent_trace = parent_trace

    def on_episode_ended(self, message) -> None:
        # Textual runs LiveScreen's handler too (it dispatches along the class's MRO).
        if message.result is not None and not self._quit_after:
            self.call_after_refresh(self.action_diff_parent)

    def action_diff_parent(self) -> None:
        if self.running or self.result is None or not self.result.trace_path.is_file():
            self.app.notify("the diff opens once the fork has ended", severity="warning")
            return
        self.app.open_diff(self.parent_trace, self.result.trace_path)
