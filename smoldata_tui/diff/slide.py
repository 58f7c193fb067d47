"""Among equally long common subsequences, prefer the one that puts a removal next to an insertion.

A = [ls, head -3, cat, cat] and B = [ls, head -5, cat] have two longest common subsequences:
B's ``cat`` matched with A's first ``cat`` (head -3 removed, head -5 inserted, A's last cat
removed: three places) or with A's last (head -3 → head -5 changed, one cat removed). The
search may return either. A group of removed calls can slide over a run of matched calls when
it is made of the same keys (the edit stays as long, as git's diff slides its hunks); it is slid
when that brings it right next to a group of inserted calls, so the two become one place, which
the diff then reads as ``changed`` calls. Linear: each run of matches is looked at by the groups on
its two sides only.
"""

from __future__ import annotations

from collections.abc import Sequence

SAME, REMOVED, INSERTED = 0, 1, 2


def _script(pairs: list[tuple[int, int]], n: int, m: int) -> list[tuple[int, int, int]]:
    ops: list[tuple[int, int, int]] = []
    next_a = next_b = 0
    for i, j in [*pairs, (n, m)]:
        ops.extend((REMOVED, k, -1) for k in range(next_a, i))
        ops.extend((INSERTED, -1, k) for k in range(next_b, j))
        if i < n:
            ops.append((SAME, i, j))
        next_a, next_b = i + 1, j + 1
    return ops


def _run_slides(keys: Sequence, group: list[tuple[int, int, int]], run: list[tuple[int, int, int]], side: int,
                down: bool) -> bool:  # fmt: skip
    """Whether the group (indices on ``side``) can trade places with the run of matches."""
    first = group[0][side]
    size = len(group)
    if down:  # group g..g+k-1, run g+k..: key g+u must equal key g+k+u
        return all(keys[first + u] == keys[first + size + u] for u in range(len(run)))
    start = first - len(run)  # run start..first-1, group first..: key start+u == key start+k+u
    return all(keys[start + u] == keys[start + size + u] for u in range(len(run)))


def _slid(group: list[tuple[int, int, int]], run: list[tuple[int, int, int]], kind: int, down: bool):
    """The group and the run after trading places (the run's other side keeps its indices)."""
    side = 1 if kind == REMOVED else 2
    other = 3 - side
    size, length = len(group), len(run)
    first = group[0][side] + (length if down else -length)
    moved = [(kind, first + u, -1) if side == 1 else (kind, -1, first + u) for u in range(size)]
    matched_start = group[0][side] if down else first + size
    matches = []
    for u, op in enumerate(run):
        index = matched_start + u
        matches.append((SAME, index, op[other]) if side == 1 else (SAME, op[other], index))
    return (matches + moved) if down else (moved + matches)


def line_up(pairs: list[tuple[int, int]], keys_a: Sequence, keys_b: Sequence) -> list[tuple[int, int]]:
    """The same number of matched pairs, slid so removals and insertions meet where they can."""
    ops = _script(pairs, len(keys_a), len(keys_b))
    p = 0
    while p < len(ops):
        kind = ops[p][0]
        if kind == SAME:
            p += 1
            continue
        q = p
        while q < len(ops) and ops[q][0] == kind:
            q += 1
        other = INSERTED if kind == REMOVED else REMOVED
        if (p and ops[p - 1][0] == other) or (q < len(ops) and ops[q][0] == other):
            p = q
            continue
        side, keys = (1, keys_a) if kind == REMOVED else (2, keys_b)
        end = q
        while end < len(ops) and ops[end][0] == SAME:
            end += 1
        if end > q and end < len(ops) and ops[end][0] == other and _run_slides(keys, ops[p:q], ops[q:end], side, True):
            ops[p:end] = _slid(ops[p:q], ops[q:end], kind, down=True)
            p = end  # the group now ends right before the other group
            continue
        start = p
        while start > 0 and ops[start - 1][0] == SAME:
            start -= 1
        if start < p and start > 0 and ops[start - 1][0] == other and _run_slides(keys, ops[p:q], ops[start:p], side, False):
            ops[start:q] = _slid(ops[p:q], ops[start:p], kind, down=False)
        p = q
    return [(op[1], op[2]) for op in ops if op[0] == SAME]
