"""Which timeline rows are shown: a filter over the engine's event records.

A filter hides rows (it does not merely highlight them). It is evaluated on the compact
:class:`~smoldata_tui.trace.EventRecord` fields and the findings index only, so it never
re-reads the file and can run over 150,000 events in a few tens of milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from smoldata_tui.trace import EventRecord, Severity
from smoldata_tui.trace.summary import UNFINISHED

CALL_STATUSES = ("completed", "error", UNFINISHED)


def call_status(record: EventRecord) -> str | None:
    """completed / error / unfinished for tool calls (running, pending, no state ...), else None."""
    if record.status is None:
        return None
    return record.status if record.status in ("completed", "error") else UNFINISHED


@dataclass(frozen=True)
class EventFilter:
    """Empty sets mean "any". Tool and status choices only ever show tool calls."""

    kinds: frozenset[str] = field(default_factory=frozenset)
    tools: frozenset[str] = field(default_factory=frozenset)
    statuses: frozenset[str] = field(default_factory=frozenset)
    findings_only: bool = False  # rows with at least one finding
    errors_only: bool = False  # rows with at least one error finding

    @property
    def active(self) -> bool:
        return bool(self.kinds or self.tools or self.statuses or self.findings_only or self.errors_only)

    def with_changes(self, **changes: object) -> EventFilter:
        return replace(self, **changes)

    def matches(self, record: EventRecord, worst: Severity | None) -> bool:
        if self.kinds and record.kind not in self.kinds:
            return False
        if self.tools and record.tool not in self.tools:
            return False
        if self.statuses and call_status(record) not in self.statuses:
            return False
        if self.errors_only and worst is not Severity.ERROR:
            return False
        if self.findings_only and worst is None:
            return False
        return True

    def describe(self) -> str:
        """``tool_use · bash · findings only`` for the status line; "" when inactive."""
        parts = [", ".join(sorted(group)) for group in (self.kinds, self.tools, self.statuses) if group]
        if self.errors_only:
            parts.append("error findings only")
        elif self.findings_only:
            parts.append("findings only")
        return " · ".join(parts)


NO_FILTER = EventFilter()
