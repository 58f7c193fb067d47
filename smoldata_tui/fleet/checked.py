"""What checking works on and gives: a :class:`Listed` trace (the folder whose cache holds it) and
one trace's :class:`Checked` result (its summary, and its report or its JSON line).

Shared by the engine (``check.py``) and its cache between runs (``check_cache.py``), which makes
results from its entries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from smoldata_tui.fleet.summary import EpisodeSummary

if TYPE_CHECKING:
    from smoldata_tui.trace import TraceReport


@dataclass(slots=True)
class Checked:
    """One trace's result: its summary, plus the report (table) or the ready JSON line (--json)."""

    name: str  # the trace's path as listed (a str pickles back from a worker cheaply)
    summary: EpisodeSummary
    report: TraceReport | None = None
    line: bytes | None = None
    key: tuple | None = None  # what the cache keeps it under, when the worker took it (fleet/cache.py)

    @property
    def path(self) -> Path:
        return Path(self.name)

    def __reduce__(self):
        return (Checked, (self.name, self.summary, self.report, self.line, self.key))  # see EpisodeSummary's

    @property
    def error(self) -> str | None:
        return self.summary.error

    @property
    def accepted(self) -> bool:
        return self.summary.accepted

    def has_errors(self) -> bool:
        return self.summary.errors > 0


@dataclass(slots=True)
class Listed:
    """A trace to check: its path as listed, the folder whose cache holds it, and the names in
    its own folder (None when it was named as a file: its sidecars are asked for one by one)."""

    path: str
    root: str
    relative: str  # the path within ``root``: how its cache knows it
    names: frozenset[str] | None = None

    @classmethod
    def file(cls, path: str) -> Listed:
        """A trace named as a file: its folder's cache holds it."""
        return cls(path, os.path.dirname(path) or ".", os.path.basename(path))
