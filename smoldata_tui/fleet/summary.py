"""One episode in a line: what the fleet table, ``check --summary`` and the cache keep of it.

An :class:`EpisodeSummary` is computed once from the trace's report and its ``run.meta.json``
(in a worker process), is small enough to keep 10,000 of in memory and to pickle back, and
round-trips through a plain list for the cache.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from smoldata_tui.store.metadata import (
    METADATA_SUFFIX,
    TRAINING_SUFFIX,
    EpisodeMetadata,
    effective_status,
    parse_time,
    sibling_path,
)
from smoldata_tui.trace.numbers import json_safe
from smoldata_tui.trace.text import clip

if TYPE_CHECKING:
    from smoldata_tui.trace.analysis import TraceReport


@dataclass(slots=True)
class EpisodeSummary:
    path: str
    error: str | None = None  # the trace could not be read: why, in one line
    native_tool_calls: int | None = None
    crash: str | None = None  # the exception class that escapes the wrapper
    reason: str | None = None  # "ValueError: Missing or repeated tool action IDs" when not an int
    verdict_line: int | None = None
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # finding kind → count
    steps: int = 0
    calls: int = 0
    tool_errors: int = 0
    tokens: int = 0  # input + output + reasoning
    cost: float = 0.0
    wall_s: float = 0.0  # first to last event timestamp
    # From run.meta.json, when it sits beside the trace:
    has_meta: bool = False
    meta_error: str | None = None  # why run.meta.json (or a field of it) could not be used
    task: str | None = None
    model: str | None = None
    started_at: str | None = None
    status: str | None = None
    grade: str | None = None  # "reward 1", "grader failed", …
    env_reward: float | None = None
    duration_s: float | None = None
    training: bool = False  # a run.training.json sits beside the trace
    last_tool: str | None = None  # the tool of the last call
    flagged: list[str] = field(default_factory=list)  # the kinds of its error and warning findings, sorted

    # --- the verdict, in the words of --summary ---------------------------------------------
    @property
    def accepted(self) -> bool:
        return self.error is None and self.native_tool_calls is not None

    @property
    def rejected(self) -> bool:
        """The wrapper returns None (it caught the exception)."""
        return self.error is None and self.native_tool_calls is None and self.crash is None

    @property
    def crashed(self) -> bool:
        return self.error is None and self.crash is not None

    @property
    def passed(self) -> bool:
        return self.env_reward == 1.0

    @property
    def graded(self) -> bool:
        return self.env_reward is not None

    @property
    def grade_bucket(self) -> str:
        if self.env_reward is None:
            return "ungraded" if self.has_meta else "no grade"
        return "pass" if self.env_reward == 1.0 else "fail" if self.env_reward <= 0 else "partial"

    @property
    def signature(self) -> str:
        """What kind of failure (or success) this is, without a model: its error and warning
        finding kinds, how it ended, its last tool and its grade, e.g.
        ``duplicate_call_id · finished · last bash · fail``. Deterministic: the same for the same
        episode on every surface, so a fleet can be counted by it."""
        if self.error is not None:
            return "unreadable"
        codes = "+".join(self.flagged) or "clean"
        ended = self.status or "stream only"
        return f"{codes} · {ended} · last {clip(self.last_tool or 'none', 40)} · {self.grade_bucket}"

    @property
    def duration(self) -> float | None:
        """Seconds: the episode's own timing when run.meta.json has it, else the trace's span."""
        return self.duration_s if self.duration_s is not None else (self.wall_s if self.error is None else None)

    # --- the cache's form --------------------------------------------------------------------
    def to_row(self) -> list:
        return [getattr(self, name) for name in _FIELDS]

    def __reduce__(self):
        # Pickled by its fields, in order (a worker sends one back per trace): several times
        # cheaper than the default for a slotted dataclass.
        return (EpisodeSummary, tuple(self.to_row()))

    @classmethod
    def from_row(cls, row: list) -> EpisodeSummary:
        if len(row) != len(_FIELDS):
            raise ValueError("a cached summary of another shape")
        return cls(*row)


_FIELDS = [f.name for f in fields(EpisodeSummary)]


def from_report(path: str, report: TraceReport) -> EpisodeSummary:
    verdict, stats = report.verdict, report.stats
    severities = report.severity_counts()
    kinds: dict[str, int] = {}
    for finding in report.findings:
        kinds[finding.kind] = kinds.get(finding.kind, 0) + 1
    tokens = stats.tokens
    flagged = sorted({finding.kind for finding in report.findings if finding.severity.value in ("error", "warning")})
    return EpisodeSummary(
        path=path,
        native_tool_calls=verdict.native_tool_calls,
        crash=verdict.wrapper_crash,
        reason=verdict.reason,
        verdict_line=verdict.failure.line if verdict.failure else None,
        errors=severities["error"],
        warnings=severities["warning"],
        infos=severities["info"],
        kinds=kinds,
        steps=stats.steps,
        calls=stats.calls,
        tool_errors=stats.calls_by_status.get("error", 0),
        tokens=json_safe(int(tokens.get("input", 0) + tokens.get("output", 0) + tokens.get("reasoning", 0))),
        cost=round(stats.cost, 6),
        wall_s=stats.wall_time_ms / 1000,
        last_tool=stats.last_tool,
        flagged=flagged,
    )


def unreadable(path: str, exc: OSError) -> EpisodeSummary:
    if isinstance(exc, FileNotFoundError) and os.path.islink(path):
        why = f"a symbolic link to {clip(_link_target(path), 200)!r}, which does not exist"
    elif isinstance(exc, FileNotFoundError):
        why = "the trace is gone (deleted or moved while it was being read)"
    elif isinstance(exc, IsADirectoryError):
        why = "not a file"
    else:
        why = f"cannot read: {exc.strerror or exc}"
    return EpisodeSummary(path=path, error=why)


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def add_metadata(summary: EpisodeSummary) -> EpisodeSummary:
    """Fill the run.meta.json fields (and note a training trace) from the files beside the trace."""
    # imported here: a cached re-run of check reads no metadata, and its start-up is most of its time
    from smoldata_tui.store.metadata_reader import load_metadata

    problems: list[str] = []
    metadata = load_metadata(sibling_path(summary.path, METADATA_SUFFIX), problems)
    return fill_metadata(summary, metadata, problems)


def fill_metadata(summary: EpisodeSummary, metadata: EpisodeMetadata | None, problems: list[str]) -> EpisodeSummary:
    """:func:`add_metadata` with ``run.meta.json`` already loaded (``problems``: what loading it said)."""
    if problems:
        summary.meta_error = clip("; ".join(problems), 300)
    summary.has_meta = metadata is not None or bool(problems)
    summary.training = os.path.exists(sibling_path(summary.path, TRAINING_SUFFIX))
    if metadata is None:
        return summary
    # A run whose process died without saving reads as interrupted (session.metadata.effective_status).
    summary.task, summary.model, summary.status = metadata.task, metadata.model, effective_status(metadata)
    summary.started_at = metadata.started_at if parse_time(metadata.started_at) else None
    if metadata.grade is not None:
        summary.grade = metadata.grade.badge()
        summary.env_reward = metadata.grade.env_reward
    summary.duration_s = metadata.duration_s
    return summary
