"""The rules read from an episode's tool calls and step counts, in one pass over its trace: reward
integrity (:mod:`smoldata_tui.episode.integrity`) and the budget forecast
(:mod:`smoldata_tui.training.budget`). One pass because each costs a full read of the trace, and
``check`` reads thousands."""

from __future__ import annotations

import os

from smoldata_tui.episode.integrity import IntegrityRules, scan_events
from smoldata_tui.session.metadata import EpisodeMetadata
from smoldata_tui.trace.finding import Finding
from smoldata_tui.training.budget import StepReader, context_window_of, forecast


def trace_rule_findings(trace_path: str | os.PathLike[str], metadata: EpisodeMetadata | None) -> list[Finding]:
    """Integrity and budget findings of a trace; none when it cannot be read (its reader says why)."""
    integrity, steps = IntegrityRules(), StepReader()
    try:
        scan_events(trace_path, integrity.take, steps.take)
    except OSError:
        return []
    return integrity.findings() + forecast(steps.steps, context_window_of(metadata))
