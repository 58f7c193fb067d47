"""The groups a GRPO-style trainer learns from: k attempts at one task by one model, each scored
against the group's mean.

A group is every episode of a fleet with the same task and model (from ``run.meta.json``), its
attempts in batch order (the order of ``batch.json`` beside them), else by start time. For each:

- ``rewards``: each attempt's ``env_reward``; an attempt that was not graded has none (null);
- ``mean`` and ``std`` over the graded attempts: the sample standard deviation (n − 1), as TRL's
  GRPO computes it (``torch.std``), and 0 for a group of one;
- ``advantages`` ``r − mean`` and ``advantages_scaled`` ``(r − mean) / (std + 1e-4)`` per attempt
  (null where the attempt was not graded);
- ``zero_variance``: every graded attempt got the same reward, so the group teaches nothing
  ("no learning signal"); a group of one, or with no graded attempt, is flagged too;
- ``rejected``: the attempts whose trace the training wrapper rejects (``native_tool_calls``
  None) or would crash on: their turns carry no valid calls;
- ``running``: the attempts still running (a batch read mid-way): no reward yet, and their
  unfinished trace is no verdict, so they are neither rejected nor failing;
- ``first_split`` (see :mod:`smoldata_tui.diff.group_split`): the first step at which what the
  passing attempts do and what the failing ones do part ways.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import PurePath

import orjson

from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.store.batch_summary import BATCH_FILE, PASS_REWARD
from smoldata_tui.trace.reader import read_at_most

SCALE_EPSILON = 1e-4  # TRL's GRPO: (r - mean) / (std + 1e-4)
MAX_BATCH_BYTES = 16 << 20  # a batch.json of 10,000 episodes is a few MB
RUNNING = "running"  # run.meta.json's status while the episode runs (a dead owner's reads as interrupted)


@dataclass
class Group:
    task: str | None
    model: str | None
    attempts: list[EpisodeSummary]  # in attempt order
    first_split: dict | None = None
    split_read: bool = False  # whether the first split was looked for (it needs the traces read)

    @property
    def rewards(self) -> list[float | None]:
        return [attempt.env_reward for attempt in self.attempts]

    @property
    def graded(self) -> list[float]:
        return [reward for reward in self.rewards if reward is not None]

    @property
    def mean(self) -> float | None:
        graded = self.graded
        return sum(graded) / len(graded) if graded else None

    @property
    def std(self) -> float | None:
        graded = self.graded
        if not graded:
            return None
        if len(graded) < 2:
            return 0.0
        mean = sum(graded) / len(graded)
        return math.sqrt(sum((reward - mean) ** 2 for reward in graded) / (len(graded) - 1))

    @property
    def advantages(self) -> list[float | None]:
        mean = self.mean
        return [None if reward is None or mean is None else reward - mean for reward in self.rewards]

    @property
    def advantages_scaled(self) -> list[float | None]:
        std = self.std
        return [None if advantage is None or std is None else advantage / (std + SCALE_EPSILON)
                for advantage in self.advantages]  # fmt: skip

    @property
    def zero_variance(self) -> bool:
        """No learning signal: every graded attempt has the same reward (or one attempt, or none graded)."""
        return len(set(self.graded)) <= 1 or len(self.graded) < 2

    @property
    def running(self) -> list[int]:
        """The attempts still running: an unfinished trace says nothing of how the wrapper will judge it."""
        return [index for index, attempt in enumerate(self.attempts) if attempt.status == RUNNING]

    @property
    def rejected(self) -> list[int]:
        return [index for index, attempt in enumerate(self.attempts)
                if attempt.error is None and attempt.native_tool_calls is None and attempt.status != RUNNING]  # fmt: skip

    @property
    def unreadable(self) -> list[int]:
        return [index for index, attempt in enumerate(self.attempts) if attempt.error is not None]

    @property
    def passing(self) -> list[int]:
        return [index for index, attempt in enumerate(self.attempts) if attempt.env_reward == PASS_REWARD]

    @property
    def failing(self) -> list[int]:
        """Every attempt that ended without passing, graded or not (as pass@k counts them)."""
        return [index for index, attempt in enumerate(self.attempts)
                if attempt.env_reward != PASS_REWARD and attempt.status != RUNNING]  # fmt: skip

    @property
    def signal(self) -> float:
        """How much the group teaches, for sorting: the spread of its rewards (0: nothing)."""
        return 0.0 if self.zero_variance else (self.std or 0.0)

    def to_json(self) -> dict:
        return {
            "task": self.task,
            "model": self.model,
            "attempts": len(self.attempts),
            "rewards": self.rewards,
            "mean": self.mean,
            "std": self.std,
            "advantages": self.advantages,
            "advantages_scaled": self.advantages_scaled,
            "zero_variance": self.zero_variance,
            "rejected": self.rejected,
            "running": self.running,
            "first_split": self.first_split,
            "episodes": [attempt.path for attempt in self.attempts],
            "tokens": [attempt.tokens for attempt in self.attempts],
        }


@dataclass
class _BatchOrders:
    """Where each episode folder stands in its batch's ``batch.json`` (read once per batch)."""

    positions: dict[str, dict[str, int]] = field(default_factory=dict)  # batch folder → episode folder → index

    def position(self, trace_path: str) -> tuple[str, int] | None:
        episode_dir = os.path.dirname(os.path.abspath(trace_path))
        batch_dir = os.path.dirname(episode_dir)
        if batch_dir not in self.positions:
            self.positions[batch_dir] = _read_batch_order(batch_dir)
        index = self.positions[batch_dir].get(os.path.basename(episode_dir))
        return None if index is None else (batch_dir, index)


def _read_batch_order(batch_dir: str) -> dict[str, int]:
    """Episode folder name → its place in ``batch.json`` (empty when there is none, or it is unreadable)."""
    try:
        with open(os.path.join(batch_dir, BATCH_FILE), "rb") as handle:
            raw = read_at_most(handle, MAX_BATCH_BYTES + 1)
        data = orjson.loads(raw) if len(raw) <= MAX_BATCH_BYTES else None
    except (OSError, orjson.JSONDecodeError):
        data = None
    episodes = data.get("runs") if isinstance(data, dict) else None
    order: dict[str, int] = {}
    for index, episode in enumerate(episodes if isinstance(episodes, list) else []):
        folder = episode.get("folder") if isinstance(episode, dict) else None
        if isinstance(folder, str) and folder and folder not in order:
            order[os.path.basename(os.path.normpath(folder))] = index
    return order


def group_episodes(summaries: list[EpisodeSummary]) -> list[Group]:
    """The fleet's groups, by (task, model), sorted by task then model; attempts in batch order,
    then by start time and path for episodes outside a batch."""
    orders = _BatchOrders()
    grouped: dict[tuple[str, str], list[tuple[tuple, EpisodeSummary]]] = {}
    for summary in summaries:
        batch = orders.position(summary.path)
        key = (0, batch[0], batch[1], "", summary.path) if batch else (1, "", 0, summary.started_at or "", summary.path)
        grouped.setdefault((summary.task or "", summary.model or ""), []).append((key, summary))
    groups = []
    for (task, model), members in sorted(grouped.items()):
        members.sort(key=lambda member: member[0])
        groups.append(Group(task or None, model or None, [summary for _, summary in members]))
    return groups


def folder_groups(folder: str | os.PathLike[str]) -> list[Group]:
    """The groups of the readable episodes saved in ``folder`` (a batch's, while it runs too), most
    learning signal first: what the batch grid's ``a`` shows."""
    from smoldata_tui.fleet.check import check_all, list_traces

    listed = list_traces([str(folder)])
    summaries = [checked.summary for checked in check_all(listed, as_json=False, with_metadata=True)]
    return by_signal(group_episodes([summary for summary in summaries if summary.error is None]))


def add_first_splits(groups: list[Group]) -> None:
    """Look for each group's first split: only where it has both passing and failing attempts
    (the traces of those groups are read again, for their calls)."""
    from smoldata_tui.diff.group_split import first_split

    for group in groups:
        group.split_read = True
        if group.passing and group.failing:
            group.first_split = first_split([attempt.path for attempt in group.attempts], group.passing, group.failing)


def flags(group: Group) -> list[str]:
    """What a trainer should know about a group, one phrase each (the groups table's and screens')."""
    found = []
    if group.zero_variance:
        found.append("no learning signal")
    rejected = [index for index in group.rejected if not group.attempts[index].crashed]
    crashed = [index for index in group.rejected if group.attempts[index].crashed]
    if rejected:
        found.append(f"wrapper rejects attempt {_named(group, rejected)} (None)")
    if crashed:
        found.append(f"wrapper would crash on attempt {_named(group, crashed)}")
    if group.running:
        found.append(f"attempt {_named(group, group.running)} running")
    if group.unreadable:
        found.append(f"unreadable: attempt {_named(group, group.unreadable)}")
    return found


def _named(group: Group, indexes: list[int]) -> str:
    """``2 [sales-top-region-3]``: attempts count from 0, a batch's folders from 1, so each is named."""
    return ", ".join(f"{index} [{episode_name(group.attempts[index].path)}]" for index in indexes)


def episode_name(path: str) -> str:
    """An episode folder's name for its ``run.jsonl``, else the trace file's name."""
    trace = PurePath(path)
    return trace.parent.name if trace.name == "run.jsonl" and trace.parent.name else trace.name


def by_signal(groups: list[Group]) -> list[Group]:
    """Most learning signal first; ties by task and model."""
    return sorted(groups, key=lambda group: (-group.signal, group.task or "", group.model or ""))
