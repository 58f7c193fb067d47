"""What one worker process does with one trace: analyse it and summarise it.

Kept apart so a forkserver can preload it (and through it the whole engine) once.
"""

from __future__ import annotations

from smoldata_tui.episode.findings import episode_findings
from smoldata_tui.episode.trace_rules import TraceRules
from smoldata_tui.fleet.summary import EpisodeSummary, fill_metadata, from_report, unreadable
from smoldata_tui.store.metadata import METADATA_SUFFIX, sibling_path
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace.analysis import TraceReport, analyze_path
from smoldata_tui.trace.export_doc import account_for_export
from smoldata_tui.trace.parallel import analyze_path_parallel


def analyze_trace(
    path: str, *, big: bool = False, with_metadata: bool = False
) -> tuple[TraceReport | None, EpisodeSummary]:
    """The report (None when the file cannot be read) and its summary; with ``with_metadata``
    the summary also has what ``run.meta.json`` says (read once, for the findings too).

    ``big``: analyse the file in parts on every CPU (from a process that is not a pool worker).
    The one place ``check`` and the fleet get a trace's report: findings from elsewhere (the
    episode's sidecar files) belong here, before the summary counts them.
    """
    rules = TraceRules()  # fed by this parse (a big trace's parts feed one each, merged in order)
    try:
        if big:
            report = analyze_path_parallel(path, rider=rules)
        else:
            report = analyze_path(path, rider=rules)[0]
        report = account_for_export(path, report)  # an `opencode export` document is said to be one
    except OSError as exc:
        report, summary = None, unreadable(path, exc)
        if with_metadata:
            problems: list[str] = []
            fill_metadata(summary, load_metadata(sibling_path(path, METADATA_SUFFIX), problems), problems)
        return report, summary
    problems = []
    metadata = load_metadata(sibling_path(path, METADATA_SUFFIX), problems)
    # the episode's configuration, when its sidecars sit beside it
    report.findings.extend(episode_findings(path, report.findings, report.stats.calls_by_tool, metadata, rules))
    summary = from_report(path, report)
    if with_metadata:
        fill_metadata(summary, metadata, problems)
    return report, summary


def summarize_episode(path: str) -> EpisodeSummary:
    """The fleet table's row: the trace's summary and what ``run.meta.json`` says."""
    return analyze_trace(path, with_metadata=True)[1]
