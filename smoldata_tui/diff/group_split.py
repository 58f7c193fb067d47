"""Where a group's winners and losers part ways: the two-episode diff generalised to k attempts.

The attempts' tool calls are lined up step by step (steps counted from 1 at each ``step_start``,
as the timeline counts them). What an attempt does at a step is the sequence of its calls there,
each keyed as the diff keys it (the tool and its normalised input: ids, timestamps and temporary
paths do not count); an attempt that has no such step has ended. The **first split** is the
first step at which no failing attempt does what any passing attempt does: the passing side may
agree or not, but nothing on the failing side matches it. Before it, at every step some passing
and some failing attempt did the same.

Its JSON form: ``{"step", "passing": [tools], "failing": [tools], "passing_calls": [...],
"failing_calls": [...]}``, the tool names called there by each side in first-seen order, and the
calls as one-line summaries ("read /workdir/sales.csv"), at most a few per side.
"""

from __future__ import annotations

from collections.abc import Sequence

from smoldata_tui.diff.calls import Call, DiffInputError, load_episode

MAX_SUMMARIES = 5  # calls named per side
ENDED = None  # what an attempt "does" at a step it never reached


def steps_of(calls: list[Call]) -> dict[int, tuple[bytes, ...]]:
    """Step → the keys of the calls made in it, in order."""
    steps: dict[int, list[bytes]] = {}
    for call in calls:
        steps.setdefault(call.step, []).append(call.input_print)
    return {step: tuple(keys) for step, keys in steps.items()}


def _last_step(calls: list[Call]) -> int:
    return max((call.step for call in calls), default=0)


def first_split(paths: Sequence[str], passing: Sequence[int], failing: Sequence[int]) -> dict | None:
    """The first split of the attempts at ``paths`` (indexes into it for each side), or None when
    the sides never part ways (or a side's traces cannot be read)."""
    calls: dict[int, list[Call]] = {}
    for index in {*passing, *failing}:
        try:
            calls[index] = load_episode(paths[index], verdict_only=True).calls
        except DiffInputError:
            return None
    return split_from_calls(calls, passing, failing)


def split_from_calls(calls: dict[int, list[Call]] | list[list[Call]], passing: Sequence[int],
                     failing: Sequence[int]) -> dict | None:  # fmt: skip
    """:func:`first_split` of calls already read (indexed by attempt)."""
    step = split_step({index: calls[index] for index in passing}, {index: calls[index] for index in failing})
    if step is None:
        return None
    return {
        "step": step,
        "passing": _tools_at(step, [calls[index] for index in passing]),
        "failing": _tools_at(step, [calls[index] for index in failing]),
        "passing_calls": _summaries_at(step, [calls[index] for index in passing]),
        "failing_calls": _summaries_at(step, [calls[index] for index in failing]),
    }


def split_step(passing: dict[int, list[Call]], failing: dict[int, list[Call]]) -> int | None:
    """The first step where the passing side's actions and the failing side's share nothing."""
    if not passing or not failing:
        return None
    passing_steps = [steps_of(calls) for calls in passing.values()]
    failing_steps = [steps_of(calls) for calls in failing.values()]
    last = max(_last_step(calls) for calls in (*passing.values(), *failing.values()))
    for step in range(1, last + 1):
        done = {steps.get(step, ENDED if step > max(steps, default=0) else ()) for steps in passing_steps}
        missed = {steps.get(step, ENDED if step > max(steps, default=0) else ()) for steps in failing_steps}
        if done == {ENDED} and missed == {ENDED}:
            continue
        if done.isdisjoint(missed):
            return step
    return None


def _tools_at(step: int, sides: list[list[Call]]) -> list[str]:
    tools: dict[str, None] = {}
    for calls in sides:
        for call in calls:
            if call.step == step:
                tools.setdefault(call.tool, None)
    return list(tools)


def _summaries_at(step: int, sides: list[list[Call]]) -> list[str]:
    seen: dict[str, None] = {}
    for calls in sides:
        for call in calls:
            if call.step == step:
                seen.setdefault(f"{call.tool} {call.summary}".strip(), None)
    return list(seen)[:MAX_SUMMARIES]
