"""Fork a saved episode at step N: the recording is the model before N, another model from N on.

``smoldata-tui run --fork EPISODE --at-step N --model M`` (and ``F`` on a timeline row) start a
new episode of the parent's task. Steps are counted from 1 as the timeline counts them (one per
recorded assistant message, each opened by a ``step_start``). Steps 1..N-1 are answered by the
replay model from the parent's recording and re-run for real; from step N on, requests go to M
(:mod:`fork_server`). ``--edit`` opens $EDITOR on what step N's request carries last: the output
of step N-1's last call, or at step 1 the prompt.

This module finds the parent and its step, prepares the edit, opens the fork's endpoint and
says where the finished fork parts ways with its parent. No Textual.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
from smoldata_tui.replay.model_endpoint import ModelEndpoint, open_endpoint

__all__ = ["ForkError", "ForkParent", "fork_divergence", "load_parent", "open_fork_endpoint", "prepare_edit"]

PARENT_TRACE_CAP = 256 << 20  # the parent is read whole, as the replay model reads a recording
EDIT_CAP = 16 << 20  # what the editor may hand back, in bytes


class ForkError(ValueError):
    """The fork cannot start as asked; the message says why (a usage error)."""


@dataclass(frozen=True)
class ForkParent:
    trace: Path
    metadata: EpisodeMetadata | None
    script: object  # the parent's ReplayScript

    @property
    def steps(self) -> int:
        return self.script.steps

    @property
    def task(self) -> str | None:
        return self.metadata.task if self.metadata else None

    @property
    def model(self) -> str | None:
        return self.metadata.model if self.metadata else None


def load_parent(episode: str | os.PathLike[str]) -> ForkParent:
    """A saved episode's folder (with ``run.jsonl``) or its trace file."""
    from smoldata_tui.store.metadata_reader import load_metadata
    from smoldata_tui.replay.script import ReplayScript

    path = Path(episode).expanduser()
    if path.is_dir():
        if not (path / "run.jsonl").is_file():
            raise ForkError(f"--fork {episode}: no run.jsonl in that folder (give a saved episode's folder or its trace)")
        path = path / "run.jsonl"
    elif not path.is_file():
        raise ForkError(f"--fork {episode}: no such episode folder or trace file")
    try:
        size = path.stat().st_size
        if size > PARENT_TRACE_CAP:
            raise ForkError(f"--fork {episode}: the trace is {size} bytes, over the {PARENT_TRACE_CAP >> 20} MiB a fork reads")
        script = ReplayScript.from_trace(path)
    except OSError as exc:
        raise ForkError(f"--fork {episode}: cannot read it ({exc.strerror or exc})") from None
    if not script.steps:
        raise ForkError(f"--fork {episode}: the trace has no steps to fork from")
    metadata_file = metadata_path_for(path)
    metadata = load_metadata(metadata_file, []) if metadata_file.is_file() else None
    return ForkParent(path, metadata, script)


def check_step(parent: ForkParent, at_step: int) -> None:
    if at_step < 1:
        raise ForkError(f"--at-step counts steps from 1, as the timeline does: {at_step} is not one")
    if at_step > parent.steps:
        raise ForkError(f"--at-step {at_step}: the parent {parent.trace} has {parent.steps} step"
                        f"{'s' if parent.steps != 1 else ''}")  # fmt: skip


def edit_target(parent: ForkParent, at_step: int, prompt: str) -> tuple[str | None, str, str]:
    """(call id, what it is, its text as step ``at_step``'s request carries it): the last call of
    the step before, or at step 1 the prompt (call id None)."""
    if at_step == 1:
        return None, "the prompt", prompt
    turns = [turn for turn in parent.script.turns if turn.step == at_step - 1]
    calls = turns[0].calls if turns else ()
    if not calls:
        raise ForkError(f"--edit: step {at_step - 1} made no tool call, so step {at_step}'s request carries no tool "
                        "output to edit")  # fmt: skip
    last = calls[-1]
    if last.output is None:
        raise ForkError(f"--edit: step {at_step - 1}'s last call ({last.name}) never returned in the recording")
    return last.call_id, f"the output of step {at_step - 1}'s {last.name} call ({last.call_id})", last.output


def run_editor(text: str, what: str, environ: dict[str, str] | None = None) -> str:
    """``text`` edited in $VISUAL / $EDITOR (vi when neither is set): exactly what was saved."""
    environ = os.environ if environ is None else environ
    editor = environ.get("VISUAL") or environ.get("EDITOR") or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        raise ForkError(f"--edit: cannot read $EDITOR {editor!r}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="smoldata-fork-") as folder:
        path = Path(folder, "edit.txt")
        path.write_text(text, encoding="utf-8")
        try:
            status = subprocess.run([*command, str(path)], check=False).returncode
        except OSError as exc:
            raise ForkError(f"--edit: cannot start the editor {command[0] if command else editor!r}: "
                            f"{exc.strerror or exc}") from None  # fmt: skip
        if status != 0:
            raise ForkError(f"--edit: the editor exited with status {status}; no fork started")
        data = path.read_bytes()[: EDIT_CAP + 1]
    if len(data) > EDIT_CAP:
        raise ForkError(f"--edit: the edited text of {what} is over {EDIT_CAP >> 20} MiB")
    return data.decode("utf-8", errors="replace")


def prepare_edit(parent: ForkParent, at_step: int, prompt: str, edit=run_editor):
    """The :class:`ForkEdit` for ``--edit`` (None when the text came back unchanged)."""
    from smoldata_tui.replay.fork_server import ForkEdit

    call_id, what, text = edit_target(parent, at_step, prompt)
    edited = edit(text, what)
    return None if edited == text else ForkEdit(edited, call_id)


def fork_label(parent: ForkParent, at_step: int, model_label: str, edited: bool) -> str:
    """The fork's model in run.meta.json: k forks of one parent, step, model and edit are one group."""
    return f"fork:{parent.trace.resolve()}@{at_step}{'+edit' if edited else ''}:{model_label}"


def open_fork_endpoint(parent: ForkParent, at_step: int, *, model: str | None, base_url: str | None = None,
                       api_key: str | None = None, edit=None) -> ModelEndpoint:  # fmt: skip
    """The fork's endpoint: the replay of the steps before ``at_step``, then ``model``."""
    from smoldata_tui.replay.fork_server import ForkServer

    check_step(parent, at_step)
    target = open_endpoint(model=model, base_url=base_url, api_key=api_key)
    try:
        server = ForkServer(parent.script, at_step, target, edit=edit).start()
    except BaseException:
        target.close()
        raise
    record = {"parent": str(parent.trace.resolve()), "at_step": at_step, "model": target.label,
              "edited": edit is not None, "edited_call": edit.call_id if edit else None}  # fmt: skip
    # The model's key goes out as OpenCode's key too (as in any run): the scrubber masks it.
    return ModelEndpoint(base_url=server.base_url, model=target.model, api_key=target.api_key, replay=server,
                         name=fork_label(parent, at_step, target.label, edit is not None), fork=record)  # fmt: skip



def fork_divergence(parent_trace: str | os.PathLike[str], fork_trace: str | os.PathLike[str]) -> dict:
    """Where the fork parts ways with its parent: ``identical``, ``first_step`` (the fork's step
    of the first call that differs, or None), ``counts`` of the aligned calls."""
    from smoldata_tui.diff import DiffInputError, diff_paths

    try:
        diff = diff_paths(str(parent_trace), str(fork_trace), verdict_only=True, summaries=False)
    except DiffInputError as exc:
        return {"identical": None, "first_step": None, "counts": None, "error": str(exc)}
    first = diff.first_divergence
    step = None
    if first is not None:
        pair = diff.pairs[first]
        call = diff.call_b(pair) or diff.call_a(pair)
        step = call.step if call is not None else None
    return {"identical": diff.identical, "first_step": step, "counts": diff.counts()}
