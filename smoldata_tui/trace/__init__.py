"""The trace engine: OpenCode ``run --format json`` bytes → events, findings, stats and
the training wrapper's exact verdict. Pure Python, no Textual, no I/O beyond reading.

The names below are loaded when first asked for: a module that needs one submodule (the reader,
the text helpers) does not pay for importing the whole engine (``check`` answering from its cache
never analyses a trace).
"""

from __future__ import annotations

from smoldata_tui.lazy_names import lazy_getattr

_HOMES = {
    "MALFORMED": "analysis",
    "NOT_AN_OBJECT": "analysis",
    "EventRecord": "analysis",
    "TraceAnalysis": "analysis",
    "TraceReport": "analysis",
    "analyze_bytes": "analysis",
    "analyze_path": "analysis",
    "Finding": "findings",
    "Severity": "findings",
    "Stats": "stats",
    "Verdict": "verdict",
}

__all__ = sorted(_HOMES)
__getattr__ = lazy_getattr(__name__, _HOMES, globals())
