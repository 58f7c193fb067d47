"""A longest common subsequence of two sequences, in linear memory: Myers' O(ND) algorithm.

Myers, "An O(ND) Difference Algorithm and Its Variations" (1986), with the linear-space
refinement: a bidirectional search finds a point on an optimal path (the *middle snake*), the two
halves are solved the same way. Common prefixes and suffixes are matched first. Time is
O((N+M)·D) for D differences, memory O(N+M): two diagonal arrays per level and the matched
pairs. Recursion is an explicit stack, so deep splits never hit Python's recursion limit.

Two long sequences that share almost nothing make D, and the time, large: ``budget`` caps the
diagonal steps spent in the searches. A range the budget cannot afford is matched on the elements
that occur exactly once in both halves (patience anchors, in increasing order), and what lies
between anchors is left unmatched; the result then says it is not exact.

Elements must be hashable and comparable with ``==`` (the diff gives it small ints).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_BUDGET = 600_000  # diagonal steps: about two seconds of pure Python at worst


@dataclass(slots=True)
class Alignment:
    pairs: list[tuple[int, int]]  # matched (index in a, index in b), both increasing
    exact: bool = True  # False when the budget ran out and a range was matched on anchors only


def _middle(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int, budget: list[int]):
    """A point (x, y), relative to the range, that an optimal edit path goes through; None when the
    two ranges share nothing, or when the budget ran out (budget[0] < 0 then)."""
    n, m = a_hi - a_lo, b_hi - b_lo
    max_d = (n + m + 1) // 2
    offset = max_d
    size = 2 * max_d + 2
    forward = [-1] * size
    reverse = [-1] * size
    forward[offset + 1] = 0
    reverse[offset + 1] = 0
    delta = n - m
    odd = delta % 2 != 0
    k1_start = k1_end = k2_start = k2_end = 0
    for d in range(max_d):
        budget[0] -= 2 * d + 2
        if budget[0] < 0:
            return None
        for k1 in range(-d + k1_start, d + 1 - k1_end, 2):
            index = offset + k1
            if k1 == -d or (k1 != d and forward[index - 1] < forward[index + 1]):
                x1 = forward[index + 1]
            else:
                x1 = forward[index - 1] + 1
            y1 = x1 - k1
            while x1 < n and y1 < m and a[a_lo + x1] == b[b_lo + y1]:
                x1 += 1
                y1 += 1
            forward[index] = x1
            if x1 > n:
                k1_end += 2
            elif y1 > m:
                k1_start += 2
            elif odd:
                other = offset + delta - k1
                if 0 <= other < size and reverse[other] != -1 and x1 >= n - reverse[other]:
                    return x1, y1
        for k2 in range(-d + k2_start, d + 1 - k2_end, 2):
            index = offset + k2
            if k2 == -d or (k2 != d and reverse[index - 1] < reverse[index + 1]):
                x2 = reverse[index + 1]
            else:
                x2 = reverse[index - 1] + 1
            y2 = x2 - k2
            while x2 < n and y2 < m and a[a_hi - x2 - 1] == b[b_hi - y2 - 1]:
                x2 += 1
                y2 += 1
            reverse[index] = x2
            if x2 > n:
                k2_end += 2
            elif y2 > m:
                k2_start += 2
            elif not odd:
                other = offset + delta - k2
                if 0 <= other < size and forward[other] != -1:
                    x1 = forward[other]
                    y1 = offset + x1 - other
                    if x1 >= n - x2:
                        return x1, y1
    return None


def _anchors(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> list[tuple[int, int]]:
    """Elements unique in both ranges, kept where their order agrees (longest increasing run)."""
    count_a = Counter(a[a_lo:a_hi])
    count_b = Counter(b[b_lo:b_hi])
    where_b = {b[j]: j for j in range(b_lo, b_hi) if count_b[b[j]] == 1}
    candidates = [(i, where_b[a[i]]) for i in range(a_lo, a_hi) if count_a[a[i]] == 1 and a[i] in where_b]
    # Longest increasing subsequence on the b index (patience sorting), with back links.
    tails: list[int] = []
    tail_at: list[int] = []
    previous = [-1] * len(candidates)
    for number, (_, j) in enumerate(candidates):
        place = bisect_left(tails, j)
        if place == len(tails):
            tails.append(j)
            tail_at.append(number)
        else:
            tails[place] = j
            tail_at[place] = number
        previous[number] = tail_at[place - 1] if place else -1
    chain = []
    number = tail_at[-1] if tail_at else -1
    while number != -1:
        chain.append(candidates[number])
        number = previous[number]
    chain.reverse()
    return chain


def align(a: Sequence, b: Sequence, *, budget: int = DEFAULT_BUDGET) -> Alignment:
    """The matched index pairs of a longest common subsequence of ``a`` and ``b``.

    Elements that do not occur in the other sequence can never be matched: they are set aside
    first (as GNU diff does), which keeps D, and the time, small for episodes that mostly differ.
    """
    shared = set(a).intersection(b)
    kept_a = [i for i, item in enumerate(a) if item in shared]
    kept_b = [j for j, item in enumerate(b) if item in shared]
    if len(kept_a) == len(a) and len(kept_b) == len(b):
        return _align(a, b, budget)
    result = _align([a[i] for i in kept_a], [b[j] for j in kept_b], budget)
    result.pairs = [(kept_a[i], kept_b[j]) for i, j in result.pairs]
    return result


def _align(a: Sequence, b: Sequence, budget: int) -> Alignment:
    pairs: list[tuple[int, int]] = []
    remaining = [budget]
    exact = True
    # Each item: a range to solve, or matched pairs to emit once everything before them is out.
    stack: list[tuple] = [(0, len(a), 0, len(b))]
    while stack:
        item = stack.pop()
        if len(item) == 1:
            pairs.extend(item[0])
            continue
        a_lo, a_hi, b_lo, b_hi = item
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            pairs.append((a_lo, b_lo))
            a_lo += 1
            b_lo += 1
        suffix = []
        while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
            a_hi -= 1
            b_hi -= 1
            suffix.append((a_hi, b_hi))
        if a_lo < a_hi and b_lo < b_hi:
            if suffix:
                suffix.reverse()
                stack.append((suffix,))
                suffix = []
            point = _middle(a, b, a_lo, a_hi, b_lo, b_hi, remaining) if remaining[0] >= 0 else None
            if point is not None:
                x, y = point
                stack.append((a_lo + x, a_hi, b_lo + y, b_hi))
                stack.append((a_lo, a_lo + x, b_lo, b_lo + y))
            elif remaining[0] < 0:
                exact = False
                pairs.extend(_anchors(a, b, a_lo, a_hi, b_lo, b_hi))
        suffix.reverse()
        pairs.extend(suffix)
    return Alignment(pairs, exact)
