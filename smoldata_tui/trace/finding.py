"""What a finding is: a kind, a severity, a line and a sentence a person understands."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(slots=True)
class Finding:
    # Mutable only so a part of a stream analysed on its own can be renumbered when merged.
    kind: str
    severity: Severity
    line: int | None  # 1-based physical line, None for the stream as a whole
    event: int | None  # 0-based index of the event (timeline row)
    message: str
    related_line: int | None = None  # e.g. the first occurrence of a duplicate

    def to_json(self) -> dict:
        return {
            "line": self.line,
            "event": self.event,
            "kind": self.kind,
            "severity": self.severity.value,
            "message": self.message,
            "related_line": self.related_line,
        }
