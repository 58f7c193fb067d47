"""The rules read from an episode's tool calls and step counts, in one pass over its trace: reward
integrity (:mod:`smoldata_tui.trace.integrity`) and the budget forecast
(:mod:`smoldata_tui.training.budget`). One pass because each costs a full read of the trace, and
``check`` reads thousands."""

from __future__ import annotations

import os

from smoldata_tui.trace.integrity import IntegrityRules, scan_events
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.trace.finding import Finding
from smoldata_tui.training.budget import StepReader, context_window_of, forecast


class TraceRules:
    """The rules' state for one trace. Fed as the trace engine's rider (``analyze_path(rider=…)``)
    during the analysis ``check`` and the fleet make anyway (one parse of every line, not two), or
    by a pass of its own (:func:`trace_rule_findings` without ``rules``)."""

    def __init__(self) -> None:
        self.integrity, self.steps = IntegrityRules(), StepReader()

    # the rider's calls (trace.event_pass.EventPass), for the three kinds of events the rules read
    def tool_use(self, event: dict, line: int, index: int) -> None:
        self.integrity.take(event, line, index)

    def step_start(self, event: dict, line: int, index: int) -> None:
        self.steps.take(event, line, index)

    step_finish = step_start

    def merge(self, later: TraceRules, events_before: int) -> None:
        """The rules of the trace's next part, fed on their own (a big trace is read in parts on
        every CPU: ``trace.parallel``)."""
        self.integrity.merge(later.integrity, events_before)
        self.steps.merge(later.steps, events_before)

    def findings(self, metadata: EpisodeMetadata | None) -> list[Finding]:
        return self.integrity.findings() + forecast(self.steps.steps, context_window_of(metadata))


def trace_rule_findings(trace_path: str | os.PathLike[str], metadata: EpisodeMetadata | None,
                        rules: TraceRules | None = None) -> list[Finding]:  # fmt: skip
    """Integrity and budget findings of a trace (from ``rules`` when the caller's analysis fed
    them); none when it cannot be read (its reader says why)."""
    if rules is None:
        rules = TraceRules()
        try:
            scan_events(trace_path, rules.integrity.take, rules.steps.take)
        except OSError:
            return []
    return rules.findings(metadata)
