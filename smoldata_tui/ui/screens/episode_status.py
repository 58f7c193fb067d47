"""What the episode screen's header and status line say (plain functions of its state)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from smoldata_tui.store.metadata import EpisodeMetadata, effective_status
from smoldata_tui.trace import Stats, Verdict
from smoldata_tui.trace.finding_labels import infer_status
from smoldata_tui.trace.text import clip
from smoldata_tui.ui.screens.episode_live_rows import live_elapsed_ms
from smoldata_tui.ui.timeline_model import TimelineModel
from smoldata_tui.ui.widgets.header import HeaderState


def episode_status(metadata: EpisodeMetadata | None, model: TimelineModel, *, finished: bool, live: bool,
                   events: int | None = None) -> str:  # fmt: skip
    """The metadata's word when there is one (``interrupted`` for a run whose process is gone),
    else what the trace itself says."""
    if metadata is not None and metadata.status:
        return effective_status(metadata)
    if not finished:
        return "running" if live else "loading"
    return infer_status(model.findings[: model.finding_count], ended=True, events=events)


def header_state(
    path: Path,
    metadata: EpisodeMetadata | None,
    model: TimelineModel,
    stats: Stats,
    verdict: Verdict | None,
    *,
    finished: bool,
    live: bool,
    activity: str,
    divergences: tuple[str, ...] = (),
) -> HeaderState:
    running_for = live_elapsed_ms(metadata) if live and not finished else None
    if running_for is not None:
        elapsed = running_for  # the wall clock: a long tool call writes nothing for minutes
    elif metadata is not None and metadata.duration_s is not None:
        elapsed = metadata.duration_s * 1000
    else:
        elapsed = stats.wall_time_ms if stats.first_timestamp is not None else None
    return HeaderState(
        name=path.name,
        task=metadata.task if metadata else None,
        model=metadata.model if metadata else None,
        status=episode_status(metadata, model, finished=finished, live=live, events=stats.events),
        elapsed_ms=elapsed,
        verdict=verdict,
        grade=metadata.grade.badge() if metadata and metadata.grade else None,
        events=model.count,
        severity_counts=dict(model.severity_counts),
        activity=activity,
        final=finished,
        divergences=divergences,
    )


def status_line(model: TimelineModel, pending: int, notice: str) -> Text:
    """The line under the timeline: the filter, new events below, a reader's notice."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if model.filter.active:
        text.append(" filter ", "bold reverse")
        text.append(
            f" {clip(model.filter.describe(), 80)} \u2014 {model.row_count:,} of {model.count:,} events  (u clears) "
        )
    if pending:
        text.append(f" \u25bc {pending:,} new events (End to follow) ", "bold $warning-badge")
    if notice:
        text.append(f" {clip(notice, 200)} ", "italic")
    return text
