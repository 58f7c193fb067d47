"""The alignment is a valid edit script whose `same` entries are a longest common subsequence
(checked against a plain quadratic DP), the normalisation rules, and the core's layering."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.diff import CHANGED, ONLY_A, ONLY_B, SAME, diff_calls
from smoldata_tui.diff.align import align
from smoldata_tui.diff.calls import Call, EpisodeCalls
from smoldata_tui.diff.normalize import OUTPUT_RULES, SANDBOX_RULES, normalize_text

from .test_architecture import PACKAGE, imported_modules


def lcs_length(a: list, b: list) -> int:
    """The textbook O(N·M) dynamic programme."""
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


# A call is (tool, input): few tools and few inputs, so matches, repeats and changes are frequent.
calls = st.lists(st.tuples(st.sampled_from("xyz"), st.integers(0, 3)), max_size=14)


def episode(items: list[tuple[str, int]]) -> EpisodeCalls:
    made = [
        Call(line=2 * number + 1, piece=0, offset=0, length=0, tool=tool, status="completed",
             input_print=f"{tool}:{value}".encode(), output_print=b"", summary="")  # fmt: skip
        for number, (tool, value) in enumerate(items)
    ]
    return EpisodeCalls(Path("/nonexistent"), made, report=None)  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(calls, calls)
def test_the_script_replays_both_sides_and_same_is_a_longest_common_subsequence(items_a, items_b):
    diff = diff_calls(episode(items_a), episode(items_b))
    # Replaying the script: the A side of its entries, in order, is A; the B side is B.
    assert [pair.a for pair in diff.pairs if pair.a is not None] == list(range(len(items_a)))
    assert [pair.b for pair in diff.pairs if pair.b is not None] == list(range(len(items_b)))
    for pair in diff.pairs:
        if pair.op == SAME:
            assert items_a[pair.a] == items_b[pair.b]
        elif pair.op == CHANGED:
            assert items_a[pair.a][0] == items_b[pair.b][0] and items_a[pair.a] != items_b[pair.b]
        elif pair.op == ONLY_A:
            assert pair.b is None
        else:
            assert pair.op == ONLY_B and pair.a is None
    assert diff.counts()[SAME] == lcs_length(items_a, items_b)
    assert diff.exact
    first = diff.first_divergence
    assert first is None if items_a == items_b else diff.pairs[first].op != SAME
    assert all(pair.op == SAME for pair in diff.pairs[: first if first is not None else len(diff.pairs)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40), st.lists(st.integers(0, 5), max_size=40))
def test_align_matches_a_longest_common_subsequence(a, b):
    result = align(a, b)
    assert all(a[i] == b[j] for i, j in result.pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(result.pairs, result.pairs[1:]))
    assert len(result.pairs) == lcs_length(a, b)


def test_a_changed_call_between_repeats_pairs_with_its_own_tool():
    diff = diff_calls(episode([("x", 0), ("y", 1), ("x", 0)]), episode([("x", 0), ("z", 1), ("y", 2), ("x", 0)]))
    assert [pair.op for pair in diff.pairs] == [SAME, ONLY_B, CHANGED, SAME]


def test_a_changed_call_next_to_a_repeat_is_read_as_changed():
    # B's cat could match A's first cat (three places differ) or its last (one changed, one removed).
    for a, b, expected in (
        ([("l", 0), ("h", 3), ("c", 0), ("c", 0)], [("l", 0), ("h", 5), ("c", 0)], [SAME, CHANGED, ONLY_A, SAME]),
        ([("l", 0), ("c", 0), ("c", 0), ("h", 3)], [("l", 0), ("c", 0), ("h", 5)], [SAME, SAME, ONLY_A, CHANGED]),
        ([("l", 0), ("h", 5), ("c", 0)], [("l", 0), ("h", 3), ("c", 0), ("c", 0)], [SAME, CHANGED, SAME, ONLY_B]),
        ([("c", 0), ("c", 0), ("h", 5)], [("h", 3), ("c", 0), ("c", 0)], [ONLY_B, SAME, SAME, ONLY_A]),
    ):
        diff = diff_calls(episode(a), episode(b))
        assert [pair.op for pair in diff.pairs] == expected, (a, b)


def test_out_of_budget_the_alignment_says_it_is_not_exact_and_stays_valid():
    a = [number % 7 for number in range(3000)]
    b = [(number * 5) % 7 for number in range(3000)]
    b[100] = 99  # unique in both: an anchor the fallback can use
    a[200] = 99
    result = align(a, b, budget=1000)
    assert not result.exact
    assert all(a[i] == b[j] for i, j in result.pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(result.pairs, result.pairs[1:]))
    assert (200, 100) in result.pairs
    small_a, small_b = a[:120], b[:120]
    assert not align(small_a, small_b, budget=50).exact
    assert len(align(small_a, small_b).pairs) == lcs_length(small_a, small_b)  # the default budget suffices


def test_disjoint_long_sequences_are_quick_because_unmatched_items_are_set_aside():
    result = align(list(range(50_000)), list(range(50_000, 100_000)), budget=10)
    assert result.pairs == [] and result.exact


def test_sandbox_rules():
    cases = {
        "cat /tmp/tmp.Qw3rTy9UiO/out.txt": "cat /tmp/tmp*/out.txt",
        "ls /tmp/tmpa8_3k2l1": "ls /tmp/tmp*",
        "ls /var/tmp/tmp.AbCdEf": "ls /var/tmp/tmp*",
        "ls /tmp/tmpfile.csv": "ls /tmp/tmpfile.csv",  # an ordinary name stays
        "session ses_237aa2489001RHeOglIk1l5FUK ok": "session ses_* ok",
        "see /root/.local/share/opencode/tool-output/tool_237aa2489001RHeOglIk1l5FUK": "see /root/.local/share/opencode/tool-output/tool_*",
        "call_T19UdsG4imCWyepqeAeuBy8J done": "call_* done",
        "recall_count_total_value": "recall_count_total_value",  # inside a word
        "call_count_total_value": "call_count_total_value",  # no digit: a variable name
        "/srv/sandboxes/sbx-0123456789ab/root": "/srv/sandboxes/sbx-*/root",
        "sandbox smoldata-0123456789ab": "sandbox smoldata-*",
        "runs/20260101-120000-sales-top-region/run.jsonl": "runs/<run>-sales-top-region/run.jsonl",
        "date 2026-01-01T12:00:00Z": "date 2026-01-01T12:00:00Z",  # times are kept in inputs
    }
    for text, expected in cases.items():
        assert normalize_text(text, SANDBOX_RULES) == expected, text


def test_output_rules_also_remove_times():
    cases = {
        "2026-01-01T12:00:00.123Z done": "<time> done",
        "at 2026-01-01 12:00:05": "at <time>",
        "-rw-r--r-- 1 root root 8421 Jan  1 00:00 sales.csv": "-rw-r--r-- 1 root root 8421 <time> sales.csv",
        "ts 1767225600000": "ts <ms>",
        "id 17672256000001": "id 17672256000001",  # 14 digits: not a time
        "2024-01-03,North": "2024-01-03,North",  # a date without a time is data
    }
    for text, expected in cases.items():
        assert normalize_text(text, OUTPUT_RULES) == expected, text


def test_the_diff_core_never_imports_textual():
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in sorted((PACKAGE / "diff").rglob("*.py"))
        for name in imported_modules(path)
        if name.split(".")[0] == "textual" or name.startswith("smoldata_tui.ui")
    ]
    assert not offenders, offenders
