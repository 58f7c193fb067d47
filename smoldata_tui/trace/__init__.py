"""The trace engine: OpenCode ``run --format json`` bytes → events, findings, stats and
the training wrapper's exact verdict. Pure Python, no Textual, no I/O beyond reading.

The names below are loaded when first asked for: a module that needs one submodule (the reader,
the text helpers) does not pay for importing the whole engine (``check`` answering from its cache
never analyses a trace).
"""

from __future__ import annotations

import importlib

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


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
