"""What one worker process does with one trace: analyse it and summarise it.

Kept apart so a forkserver can preload it (and through it the whole engine) once.
"""

from __future__ import annotations

from smoldata_tui.fleet.summary import EpisodeSummary, add_metadata, from_report, unreadable
from smoldata_tui.trace.analysis import TraceReport, analyze_path


def analyze_trace(path: str) -> tuple[TraceReport | None, EpisodeSummary]:
    """The report (None when the file cannot be read) and its summary, without metadata."""
    try:
        report, _analysis = analyze_path(path)
    except OSError as exc:
        return None, unreadable(path, exc)
    return report, from_report(path, report)


def summarize_episode(path: str) -> EpisodeSummary:
    """The fleet table's row: the trace's summary and what ``run.meta.json`` says."""
    _report, summary = analyze_trace(path)
    return add_metadata(summary)
