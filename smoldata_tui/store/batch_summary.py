"""What a batch reports, per episode and per task: the rows ``batch.json`` holds and the totals
(attempts, graded, passed, pass@k, verdicts, failed) ``run --headless`` prints last."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from smoldata_tui.store.metadata_writer import write_text_atomically
from smoldata_tui.store.pass_at import pass_at_all

BATCH_FILE = "batch.json"
PASS_REWARD = 1.0  # the environment's env_reward of a correct answer


@dataclass
class EpisodeOutcome:
    """One (task, attempt) of a batch, as far as it has got."""

    task: str
    attempt: int
    state: str = "queued"  # queued / running / ended
    status: str | None = None  # the Episode's status once ended (finished / timeout / cancelled / killed / error)
    env_reward: float | None = None
    verdict: str | None = None  # accepted / rejected / crashes: the seed rule on the saved trace
    native_tool_calls: int | None = None
    why: str | None = None  # why it was not graded
    folder: str | None = None  # the episode's save folder, relative to the batch folder
    wall_s: float | None = None

    @property
    def key(self) -> str:
        return f"{self.task}-{self.attempt}"

    @property
    def graded(self) -> bool:
        return self.env_reward is not None

    @property
    def passed(self) -> bool:
        return self.env_reward == PASS_REWARD

    def to_json(self) -> dict:
        return {"task": self.task, "attempt": self.attempt, "state": self.state, "status": self.status,
                "env_reward": self.env_reward, "verdict": self.verdict, "native_tool_calls": self.native_tool_calls,
                "why": self.why, "folder": self.folder, "wall_s": self.wall_s}  # fmt: skip


def verdict_kind(verdict) -> str:
    """A trace.Verdict as the batch counts it: accepted (an int), rejected (None), crashes (an
    exception escapes the training wrapper)."""
    if verdict.failure is None:
        return "accepted"
    return "crashes" if verdict.failure.crashes else "rejected"


@dataclass
class TaskTotals:
    attempts: int = 0
    graded: int = 0
    passed: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: {"accepted": 0, "rejected": 0, "crashes": 0})

    def to_json(self) -> dict:
        return {"attempts": self.attempts, "graded": self.graded, "passed": self.passed,
                "pass_at": self.pass_at(), "verdicts": dict(self.verdicts)}  # fmt: skip

    def pass_at(self) -> dict[str, float | None]:
        """pass@1..n; with no attempt graded nothing is known (each null), not 0."""
        if not self.graded:
            return {str(k): None for k in range(1, self.attempts + 1)}
        return pass_at_all(self.attempts, self.passed)


def task_totals(outcomes: list[EpisodeOutcome]) -> dict[str, TaskTotals]:
    """Per task, in first-seen order. pass@k counts every attempt: one not graded did not pass
    (unless none was graded: then pass@k is unknown)."""
    totals: dict[str, TaskTotals] = {}
    for outcome in outcomes:
        entry = totals.setdefault(outcome.task, TaskTotals())
        entry.attempts += 1
        entry.graded += outcome.graded
        entry.passed += outcome.passed
        if outcome.verdict in entry.verdicts:
            entry.verdicts[outcome.verdict] += 1
    return totals


def failed_rows(outcomes: list[EpisodeOutcome]) -> list[dict]:
    return [{"task": o.task, "attempt": o.attempt, "status": o.status, "why": o.why or "not run", "folder": o.folder}
            for o in outcomes if o.state == "ended" and not o.graded]  # fmt: skip


def summary(outcomes: list[EpisodeOutcome], wall_s: float) -> dict:
    """The final report: ``episodes``, ``wall_s``, ``tasks``, ``failed``."""
    return {
        "episodes": len(outcomes),
        "wall_s": round(wall_s, 3),
        "tasks": {name: entry.to_json() for name, entry in task_totals(outcomes).items()},
        "failed": failed_rows(outcomes),
    }


def write_batch_file(folder: Path, document: dict) -> Path:
    """``batch.json``, replaced atomically: a reader never sees half of it."""
    path = folder / BATCH_FILE
    write_text_atomically(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path
