"""The totals of a fleet of episodes: ``check --summary`` and the fleet table's header.

``traces`` = ``accepted`` (an int verdict) + ``rejected`` (the wrapper returns None) +
``crashes`` (an exception escapes the wrapper) + ``unreadable`` (the last only appears when
some trace could not be read at all). ``reasons`` counts the exceptions behind the rejections
(``"ValueError: Missing or repeated tool action IDs"``); ``tool_calls`` sums the int verdicts;
``tasks`` comes from the episodes' ``run.meta.json``: ``passed`` means ``env_reward`` 1.0 and
``pass_rate`` is ``passed / graded`` (null when nothing was graded).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from smoldata_tui.fleet.summary import EpisodeSummary


@dataclass
class TaskTotals:
    episodes: int = 0
    graded: int = 0
    passed: int = 0
    accepted: int = 0

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def acceptance(self) -> float | None:
        return self.accepted / self.episodes if self.episodes else None

    def to_json(self) -> dict:
        return {"episodes": self.episodes, "graded": self.graded, "passed": self.passed, "pass_rate": self.pass_rate}


@dataclass
class FleetTotals:
    traces: int = 0
    accepted: int = 0
    rejected: int = 0
    crashes: int = 0
    unreadable: int = 0
    reasons: Counter = field(default_factory=Counter)
    findings: Counter = field(default_factory=Counter)
    tool_calls: int = 0
    tasks: dict[str, TaskTotals] = field(default_factory=dict)
    tokens: int = 0
    cost: float = 0.0
    signatures: Counter = field(default_factory=Counter)  # EpisodeSummary.signature → episodes

    def add(self, summary: EpisodeSummary) -> None:
        self.traces += 1
        self.signatures[summary.signature] += 1
        if summary.error is not None:
            self.unreadable += 1
        elif summary.crash is not None:
            self.crashes += 1
        elif summary.native_tool_calls is None:
            self.rejected += 1
            self.reasons[summary.reason] += 1
        else:
            self.accepted += 1
            self.tool_calls += summary.native_tool_calls
        self.findings.update(summary.kinds)
        self.tokens += summary.tokens
        self.cost += summary.cost
        if summary.task is not None:
            task = self.tasks.setdefault(summary.task, TaskTotals())
            task.episodes += 1
            task.graded += summary.graded
            task.passed += summary.passed
            task.accepted += summary.accepted

    @property
    def graded(self) -> int:
        return sum(task.graded for task in self.tasks.values())

    @property
    def passed(self) -> int:
        return sum(task.passed for task in self.tasks.values())

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    def to_json(self) -> dict:
        """The ``check --summary --json`` object (``unreadable`` only when some trace was)."""
        data = {
            "traces": self.traces,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "crashes": self.crashes,
            "reasons": dict(self.reasons.most_common()),
            "findings": dict(self.findings.most_common()),
            "tool_calls": self.tool_calls,
            "tasks": {name: self.tasks[name].to_json() for name in sorted(self.tasks)},
            "signatures": dict(sorted(self.signatures.items(), key=lambda item: (-item[1], item[0]))),
        }
        if self.unreadable:
            data["unreadable"] = self.unreadable
        return data


def fleet_totals(summaries: Iterable[EpisodeSummary]) -> FleetTotals:
    totals = FleetTotals()
    for summary in summaries:
        totals.add(summary)
    return totals
