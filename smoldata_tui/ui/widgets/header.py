"""The episode header: what this is, how it ended, and the training wrapper's verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from smoldata_tui.trace import Severity, Verdict
from smoldata_tui.trace.number_format import format_duration
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.theme_text import themed

STATUS_STYLE = {
    "running": "bold $success",
    "finished": "bold",
    "killed": "bold $error",
    "timeout": "bold $error",
    "cancelled": "bold $warning",
    "interrupted": "bold $warning",
    "error": "bold $error",
    "empty": "bold $error",
    "not a trace": "bold $error",
}


@dataclass(frozen=True)
class HeaderState:
    name: str = ""
    task: str | None = None
    model: str | None = None
    status: str = "loading"
    elapsed_ms: float | None = None
    verdict: Verdict | None = None
    grade: str | None = None
    events: int = 0
    severity_counts: dict[Severity, int] = field(default_factory=dict)
    activity: str = ""  # loading 45% / following / ▶ playback 2×
    final: bool = False  # the verdict is final (the whole stream has been read)
    divergences: tuple[str, ...] = ()  # a replay's divergences, one line each


def verdict_text(verdict: Verdict | None, *, final: bool = True, starting: bool = False) -> Text:
    """The verdict badge. While a live trace is still being written its verdict is only what the
    wrapper would say if it ended there: drawn plain, not in the warning colour; before OpenCode
    has written anything it is no verdict at all."""
    if starting:
        return Text("verdict: starting OpenCode… (no events yet)", "dim")
    if verdict is None:
        return Text("verdict: reading the trace…", "dim")
    badge = clip(verdict.badge(), 300)
    if not final:
        text = Text("verdict so far ", "dim")
        text.append(f" {badge} ", "bold reverse")
        return text
    if verdict.failure is None:
        style = "bold $success-badge"
    elif verdict.failure.crashes:
        style = "bold $error-badge"
    else:
        style = "bold $warning-badge"
    text = Text("verdict ", "dim")
    text.append(f" {badge} ", style)
    return text


def header_text(state: HeaderState, width: int) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(clip(state.name, 60), "bold")
    if state.task:
        text.append("  task ", "dim")
        text.append(clip(state.task, 40))
    if state.model:
        text.append("  model ", "dim")
        text.append(clip(state.model, 40))
    text.append("  ")
    text.append(f" {state.status} ", STATUS_STYLE.get(state.status, "bold") + " reverse")
    if state.elapsed_ms is not None:
        text.append("  elapsed ", "dim")
        text.append(format_duration(state.elapsed_ms) or "0ms")
    if state.grade:
        text.append("  ")
        text.append(clip(state.grade, 30), "bold $accent")
    if state.divergences:
        count = len(state.divergences)
        text.append("  ")
        text.append(f" replay diverged{f' ({count})' if count > 1 else ''} ", "bold $warning-badge")
        text.append(" " + clip(state.divergences[0], 120), "$warning")
    text.append("\n")
    starting = not state.final and state.events == 0 and state.status == "running"
    text.append_text(verdict_text(state.verdict, final=state.final, starting=starting))
    if state.verdict is not None and not state.final and not starting:
        text.append(" if the trace ended here", "dim italic")
    text.append(f"   {state.events:,} events", "dim")
    counts = state.severity_counts
    if counts.get(Severity.ERROR):
        text.append(f"  \u2717 {counts[Severity.ERROR]}", "bold $error")
    if counts.get(Severity.WARNING):
        text.append(f"  ! {counts[Severity.WARNING]}", "$warning")
    if counts.get(Severity.INFO):
        text.append(f"  \u00b7 {counts[Severity.INFO]}", "dim")
    if state.activity:
        text.append(f"   {state.activity}", "italic")
    return text


class EpisodeHeader(Widget):
    DEFAULT_CSS = "EpisodeHeader { height: 2; padding: 0 1; background: $panel; }"

    state: reactive[HeaderState] = reactive(HeaderState, always_update=False)

    def render(self) -> Text:
        # Each of the two lines is cut to the width: a long first line must not push the verdict away.
        width = max(1, self.size.width - 2)
        lines = header_text(self.state, width).split("\n")
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        text = Text("\n").join(lines)
        return themed(text, self.app.theme_variables)
