"""The trace engine: OpenCode ``run --format json`` bytes → events, findings, stats and
the training wrapper's exact verdict. Pure Python, no Textual, no I/O beyond reading."""

from smoldata_tui.trace.analysis import (
    MALFORMED,
    NOT_AN_OBJECT,
    EventRecord,
    TraceAnalysis,
    TraceReport,
    analyze_bytes,
    analyze_path,
)
from smoldata_tui.trace.findings import Finding, Severity
from smoldata_tui.trace.stats import Stats
from smoldata_tui.trace.verdict import Verdict

__all__ = [
    "MALFORMED",
    "NOT_AN_OBJECT",
    "EventRecord",
    "Finding",
    "Severity",
    "Stats",
    "TraceAnalysis",
    "TraceReport",
    "Verdict",
    "analyze_bytes",
    "analyze_path",
]
