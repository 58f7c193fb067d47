"""Rows under the timeline for what the stream cannot show yet, or never will.

OpenCode writes a ``tool_use`` only when the call ends and nothing at all when it is killed, so
during a long call the last row is a ``step_start`` and the screen would look frozen. While an
episode runs, :func:`live_rows` says what is going on, inferred from the open step and the
sandbox's processes (and says that it is inferred). Once the agent was killed, the calls it
left running (recovered from ``opencode export``) are listed the same way.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.content import Content
from textual.widget import Widget

from smoldata_tui.store.metadata import EpisodeMetadata, parse_time
from smoldata_tui.session.sandbox_processes import ProcessProbe, RunningCommand
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.ui.theme_text import themed_content
from smoldata_tui.ui.timeline_model import TimelineModel

_ENDED_STEP = ("step_finish", "error")




def live_rows(model: TimelineModel, *, running: bool, processes: Sequence[RunningCommand] = (),
              now_ms: float | None = None) -> Text:  # fmt: skip
    """The inferred row of a step still in progress ("" when the last step has ended)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if not running or model.count == 0:
        return text
    last = model.record(model.count - 1)
    if last.kind in _ENDED_STEP or last.step == 0:
        return text
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    started = model.step_started.get(last.step)
    since = last.timestamp if last.timestamp is not None else started
    text.append(" \u22ef ", "bold reverse")
    if processes:
        # The duration first: at 80 columns the command is what gives way.
        oldest = max(processes, key=lambda p: p.seconds or 0)
        how_long = f"{format_duration(oldest.seconds * 1000)} " if oldest.seconds is not None else ""
        text.append(f" {how_long}tool running: bash `{clip(neutralize(oldest.command, keep_newlines=False), 80)}`", "bold")
        if len(processes) > 1:
            text.append(f" (+{len(processes) - 1} more)", "dim")
        text.append(f"  step {last.step} · inferred from the sandbox's processes", "dim italic")
    else:
        waited = f" {format_duration(max(0.0, now_ms - since))}" if since is not None else ""
        text.append(f" model thinking\u2026{waited}", "bold")
        text.append(f"  step {last.step} · inferred: the step started and nothing has been written since", "dim italic")
    return text


def recovered_rows(metadata: EpisodeMetadata | None) -> Text:
    """The calls that were running when the agent was stopped (never in the stream)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    calls = metadata.recovered_calls if metadata is not None else []
    for position, call in enumerate(calls):
        if position:
            text.append("\n")
        tool_input = call.get("input") if isinstance(call.get("input"), dict) else {}
        what = tool_input.get("command") or tool_input.get("filePath") or ""
        text.append(" \u2717 killed while running ", "bold reverse $error")
        text.append(f" {clip(neutralize(str(call.get('tool')), keep_newlines=False), 20)}", "bold $error")
        if what:
            text.append(f" `{clip(neutralize(str(what), keep_newlines=False), 50)}`", "bold")
        stopped = metadata.status or "stopped"
        text.append(f"  recovered from opencode export: status {clip(str(call.get('status')), 20)} when the agent "
                    f"was {stopped}; the stream never shows it", "dim italic")  # fmt: skip
    return text


class LiveRows(Widget):
    """The rows under the timeline; redrawn every second without laying the screen out again
    (only a change in the number of rows does that)."""

    DEFAULT_CSS = "LiveRows { height: 0; }"

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self._text = Text()

    def show(self, text: Text) -> None:
        if text == self._text:
            return
        rows = len(text.plain.splitlines()) if text.plain else 0
        if rows != (len(self._text.plain.splitlines()) if self._text.plain else 0):
            self.styles.height = rows
        self._text = text
        self.refresh()

    def render(self) -> Content:
        return themed_content(self._text)


def live_elapsed_ms(metadata: EpisodeMetadata | None) -> float | None:
    """Wall-clock time since the episode started, while it runs."""
    if metadata is None or metadata.status not in (None, "running"):
        return None
    started = parse_time(metadata.started_at)
    return None if started is None else max(0.0, (time.time() - started.timestamp()) * 1000)
