"""``K`` on a live episode (its stages, its timeline, or a batch's episode): name the shell-tool call
the agent is running, ask, then end it so OpenCode's tool returns and the agent goes on."""

from __future__ import annotations

import threading

from textual.app import App

from smoldata_tui.session.sandbox_processes import RunningCommand, probe_sandbox
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.screens.confirm import ConfirmCancel, ask_then


def running_commands(episode) -> list[RunningCommand]:
    """The shell-tool commands running in the episode's sandbox now (from a worker thread)."""
    # The episode keeps its sandbox private; it is only read here, never acted on.
    return probe_sandbox(getattr(episode, "_sandbox", None)) if episode is not None else []


def ask_to_end_call(app: App, episode) -> None:
    """From a worker thread: ask, naming the command, then end it (``None``: no episode runs)."""
    if episode is None:
        app.call_from_thread(app.notify, "the episode is no longer running", severity="warning", markup=False)
        return
    running = running_commands(episode)
    commands = [command for command in running if command.in_shell]
    if not running:
        app.call_from_thread(app.notify, "no tool call is running now", severity="warning", markup=False)
        return
    if not commands:
        alone = "; ".join(_named(episode, command, 80) for command in running)
        app.call_from_thread(
            app.notify, f"`{alone}` runs without a shell (bash ran it in its own place): OpenCode 1.18.31 notices "
            "only a shell that exits, so ending it would not make its tool return before the call's own timeout "
            "(120 s unless it set one). Left running.", severity="warning", markup=False, timeout=10)  # fmt: skip
        return
    named = "; ".join(_named(episode, command, 120) for command in commands)
    question = ConfirmCancel(f"End the running call `{named}`? Its processes are ended, OpenCode's tool returns "
                             "and the agent goes on; the episode records it.",
                             yes="End the call (y)", no="Let it run (n)")  # fmt: skip

    def end_now() -> None:  # the kill is an exec in the sandbox: off the UI thread
        threading.Thread(target=_end_calls, args=(app, episode), name="end-call", daemon=True).start()

    app.call_from_thread(ask_then, app, question, end_now)


def _end_calls(app: App, episode) -> None:
    ended = episode.cancel_running_calls()
    said = ("ended: " + "; ".join(_named(episode, command, 80) for command in ended)) if ended else \
        "the call had already ended"  # fmt: skip
    app.call_from_thread(app.notify, said, markup=False)


def _named(episode, command: RunningCommand, limit: int) -> str:
    return clip(neutralize(episode.scrub(command.command), keep_newlines=False), limit)
