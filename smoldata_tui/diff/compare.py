"""Two episodes' calls aligned into an edit script: same, changed, only_a, only_b.

1. Each call is keyed on (tool, normalised input); the keys of A and B are aligned by a longest
   common subsequence (``align``): matched calls are ``same``. Of equally long ones, the one that
   puts a removal next to an insertion is preferred (``slide``).
2. Between two matches, A's unmatched calls and B's are paired by tool, in order (again a longest
   common subsequence, on the tool names): a pair is ``changed`` (same tool at this place,
   different input); the rest are ``only_a`` / ``only_b``, A's before B's at each place.
3. ``same`` and ``changed`` pairs say whether the outputs differ: status, output or error text,
   bash exit code. Equal as written means equal; otherwise both are read back from their traces
   and compared normalised (``normalize.OUTPUT_RULES``).

The first divergence is the first entry that is not ``same``.
"""

from __future__ import annotations

from dataclasses import dataclass

from smoldata_tui.diff.align import DEFAULT_BUDGET, align
from smoldata_tui.diff.calls import Call, CallReader, EpisodeCalls, call_output
from smoldata_tui.diff.normalize import OUTPUT_RULES, fingerprint
from smoldata_tui.diff.slide import line_up

SAME, CHANGED, ONLY_A, ONLY_B = "same", "changed", "only_a", "only_b"
MARKS = {SAME: "=", CHANGED: "~", ONLY_A: "-", ONLY_B: "+"}  # a pair's mark, on the screen and in text


@dataclass(slots=True)  # not frozen: one per call, and frozen dataclasses are slow to make
class Pair:
    op: str
    a: int | None  # index into A's calls; None for only_b
    b: int | None  # index into B's calls; None for only_a
    output_differs: bool | None  # None when one side is missing


@dataclass
class EpisodeDiff:
    a: EpisodeCalls
    b: EpisodeCalls
    pairs: list[Pair]
    exact: bool  # False when the episodes were too different for an exact alignment in budget

    @property
    def first_divergence(self) -> int | None:
        """Index of the first pair that is not ``same``."""
        return next((index for index, pair in enumerate(self.pairs) if pair.op != SAME), None)

    @property
    def identical(self) -> bool:
        return self.first_divergence is None

    def call_a(self, pair: Pair) -> Call | None:
        return self.a.calls[pair.a] if pair.a is not None else None

    def call_b(self, pair: Pair) -> Call | None:
        return self.b.calls[pair.b] if pair.b is not None else None

    def divergences(self) -> list[int]:
        return [index for index, pair in enumerate(self.pairs) if pair.op != SAME]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys((SAME, CHANGED, ONLY_A, ONLY_B), 0)
        for pair in self.pairs:
            counts[pair.op] += 1
        return counts


class _OutputComparer:
    """Equal raw outputs are equal; different ones are read back and compared normalised."""

    def __init__(self, a: EpisodeCalls, b: EpisodeCalls) -> None:
        self._a, self._b = a, b
        self._readers: tuple[CallReader, CallReader] | None = None

    def differ(self, a: Call, b: Call) -> bool:
        if a.status != b.status:
            return True
        if a.output_print == b.output_print:
            return False
        if self._readers is None:
            self._readers = (CallReader(self._a.path), CallReader(self._b.path))
        part_a, part_b = self._readers[0].part(a), self._readers[1].part(b)
        if part_a is None or part_b is None:
            return True
        return normalized_output(part_a) != normalized_output(part_b)

    def close(self) -> None:
        if self._readers is not None:
            for reader in self._readers:
                reader.close()


def normalized_output(part: dict) -> bytes:
    return fingerprint(call_output(part.get("state")), OUTPUT_RULES)


def _intern(calls_a: list[Call], calls_b: list[Call], attribute: str) -> tuple[list[int], list[int]]:
    numbers: dict[object, int] = {}
    keys_a = [numbers.setdefault(getattr(call, attribute), len(numbers)) for call in calls_a]
    keys_b = [numbers.setdefault(getattr(call, attribute), len(numbers)) for call in calls_b]
    return keys_a, keys_b


def _gap(pairs: list[Pair], calls_a: list[Call], calls_b: list[Call], a_range: range, b_range: range,
         budget: int, outputs: _OutputComparer) -> bool:  # fmt: skip
    """Pair the unmatched calls of one place by tool; returns whether that was exact."""
    if not a_range or not b_range:
        pairs.extend(Pair(ONLY_A, i, None, None) for i in a_range)
        pairs.extend(Pair(ONLY_B, None, j, None) for j in b_range)
        return True
    tools_a, tools_b = _intern([calls_a[i] for i in a_range], [calls_b[j] for j in b_range], "tool")
    matched = align(tools_a, tools_b, budget=budget)
    next_a, next_b = a_range.start, b_range.start
    for x, y in matched.pairs:
        i, j = a_range.start + x, b_range.start + y
        pairs.extend(Pair(ONLY_A, k, None, None) for k in range(next_a, i))
        pairs.extend(Pair(ONLY_B, None, k, None) for k in range(next_b, j))
        pairs.append(Pair(CHANGED, i, j, outputs.differ(calls_a[i], calls_b[j])))
        next_a, next_b = i + 1, j + 1
    pairs.extend(Pair(ONLY_A, k, None, None) for k in range(next_a, a_range.stop))
    pairs.extend(Pair(ONLY_B, None, k, None) for k in range(next_b, b_range.stop))
    return matched.exact


def diff_calls(a: EpisodeCalls, b: EpisodeCalls, *, budget: int = DEFAULT_BUDGET) -> EpisodeDiff:
    calls_a, calls_b = a.calls, b.calls
    keys_a, keys_b = _intern(calls_a, calls_b, "input_print")
    matched = align(keys_a, keys_b, budget=budget)
    exact = matched.exact
    matched.pairs = line_up(matched.pairs, keys_a, keys_b)
    pairs: list[Pair] = []
    outputs = _OutputComparer(a, b)
    next_a = next_b = 0
    try:
        for i, j in [*matched.pairs, (len(calls_a), len(calls_b))]:
            if i > next_a or j > next_b:
                exact &= _gap(pairs, calls_a, calls_b, range(next_a, i), range(next_b, j), budget, outputs)
            if i < len(calls_a):
                pairs.append(Pair(SAME, i, j, outputs.differ(calls_a[i], calls_b[j])))
            next_a, next_b = i + 1, j + 1
    finally:
        outputs.close()
    return EpisodeDiff(a, b, pairs, exact)
