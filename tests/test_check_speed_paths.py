"""The shortcuts check takes for speed give what the plain way gives.

A big trace is read in parts on every CPU, and the rules that ride on the analysis (reward
integrity, the budget forecast) are fed by each part and merged, instead of reading the file a
second time: the merged rules must say what one pass says, wherever the file is cut.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldata_tui.episode.trace_rules import TraceRules
from smoldata_tui.trace.analysis import analyze_path
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.parallel import analyze_part

# Calls that move the integrity rules: looks at the data, answers written and read back, writes
# outside the working folder, the verifier's files; and steps over training's completion cap.
CALLS = [
    ("bash", "head -3 /home/user/input/sales.csv"),
    ("bash", "echo West > /workdir/answer.txt"),
    ("bash", "cat /workdir/answer.txt"),
    ("bash", "echo x > answer.txt && cat answer.txt"),
    ("bash", "echo y > /etc/passwd"),
    ("bash", "cat /tests/grader.py"),
    ("bash", "ls /workdir"),
    ("write", {"filePath": "/workdir/answer.txt", "content": "North"}),
    ("read", {"filePath": "/workdir/answer.txt"}),
    ("write", {"filePath": "/home/user/input/sales.csv", "content": "a,b"}),
]


def episode(rng: random.Random, steps: int) -> bytes:
    builder = TraceBuilder()
    for _ in range(steps):
        builder.step_start()
        tool, argument = rng.choice(CALLS)
        if tool == "bash":
            builder.bash(argument, "")
        else:
            builder.tool(tool, argument, "")
        builder.step_finish(output_tokens=rng.choice([10, 5000]))
    builder.step_start()
    builder.text("Done.")
    builder.step_finish("stop")
    return builder.dumps()


def rule_findings(rules: TraceRules) -> list[tuple]:
    return [(f.kind, f.severity.value, f.line, f.event, f.message) for f in rules.findings(None)]


def merged_rules(path, data: bytes, cuts: list[int]) -> TraceRules:
    """The rules as check feeds them for a big trace: a fresh rider per part, merged in order."""
    newline_ends = sorted({i + 1 for i, byte in enumerate(data) if byte == 0x0A})
    points = sorted({0, len(data), *(newline_ends[c % len(newline_ends)] for c in cuts)})
    ranges = list(zip(points, points[1:]))
    rules = TraceRules()
    whole = analyze_part(str(path), *ranges[0], len(ranges) == 1, rules)
    for index, (start, end) in enumerate(ranges[1:], start=1):
        later = TraceRules()
        part = analyze_part(str(path), start, end, index == len(ranges) - 1, later)
        rules.merge(later, whole.event_count)
        whole.merge(part)
    return rules


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6), st.integers(1, 12), st.lists(st.integers(0, 10**6), min_size=1, max_size=4))
def test_rules_fed_by_parts_say_what_one_pass_says(tmp_path_factory, seed, steps, cuts):
    data = episode(random.Random(seed), steps)
    path = tmp_path_factory.mktemp("parts") / "run.jsonl"
    path.write_bytes(data)
    one_pass = TraceRules()
    analyze_path(path, rider=one_pass)
    assert rule_findings(merged_rules(path, data, cuts)) == rule_findings(one_pass)


def test_a_big_trace_in_processes_has_the_rules_of_both_halves(tmp_path, monkeypatch):
    """check's own path for a big trace (work.analyze_trace, big=True): the look at the data is in
    the first half and the answer written in the second, so no answer_unread; the verifier access
    and the write outside are found in both halves; same findings as the one-process analysis, and
    the file is not read a second time for the rules."""
    from smoldata_tui.episode import trace_rules
    from smoldata_tui.fleet.work import analyze_trace
    from smoldata_tui.trace import parallel

    builder = TraceBuilder()
    for step in range(400):
        builder.step_start()
        if step == 0:
            builder.bash("head -3 /home/user/input/sales.csv", "")
        elif step in (10, 390):
            builder.bash("cat /tests/grader.py", "")
        elif step == 395:
            builder.bash("echo West > /workdir/answer.txt; echo z > /etc/motd", "")
        else:
            builder.bash("ls /workdir", "x" * 200)
        builder.step_finish(output_tokens=5000 if step in (5, 399) else 10)
    path = tmp_path / "run.jsonl"
    path.write_bytes(builder.dumps())
    one_process, _ = analyze_trace(str(path), big=False)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)

    def second_read(*_args):
        raise AssertionError("the rules read the trace again")

    monkeypatch.setattr(trace_rules, "scan_events", second_read)
    in_parts, _ = analyze_trace(str(path), big=True)
    kinds = [finding.kind for finding in in_parts.findings]
    assert kinds.count("integrity_verifier_access") == 2 and "integrity_answer_unread" not in kinds
    assert kinds.count("integrity_write_outside") == 1 and kinds.count("budget_completion_cut") == 2
    assert [f.to_json() for f in in_parts.findings] == [f.to_json() for f in one_process.findings]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(-(10**25), 10**25), st.text("0123456789 ,.", max_size=30)), max_size=5))
def test_metadata_numbers_are_read_as_json_reads_them(values):
    """run.meta.json goes to json instead of orjson when it holds a run of 19 digits (orjson reads
    an integer past 64 bits as a float): found without a regex, with the same answer."""
    import json

    from smoldata_tui.store.metadata_reader import _decode_json

    data = json.dumps({"values": values}).encode()
    assert repr(_decode_json(data)) == repr(json.loads(data))


def test_a_first_run_takes_each_traces_cache_key_in_its_worker(tmp_path, monkeypatch):
    """With an empty cache the parent stats no trace before the pool starts (the workers take each
    key as they read the trace); the next run is served from the cache those keys made."""
    import io
    import os
    import time

    from smoldata_tui.commands.check import run_check
    from smoldata_tui.fleet import check_cache
    from smoldata_tui.fleet.build import write_fleet

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "fleet"
    write_fleet(folder, 40, seed=5, defect_rate=0.3)
    past = time.time_ns() - 3600 * 10**9
    for path in folder.rglob("*"):
        os.utime(path, ns=(past, past))

    class Out(io.StringIO):
        buffer: io.BytesIO

    def check() -> bytes:
        out = Out()
        out.buffer = io.BytesIO()
        run_check([str(folder)], as_json=True, strict=False, out=out)
        return out.buffer.getvalue()

    keyed_by_parent = check_cache.episode_key

    def parent_key(*args):
        raise AssertionError("the parent took a key on a first run")

    monkeypatch.setattr(check_cache, "episode_key", parent_key)
    first = check()
    monkeypatch.setattr(check_cache, "episode_key", keyed_by_parent)
    from smoldata_tui.fleet import work

    def analysed(*args, **kwargs):
        raise AssertionError("a trace was analysed again")

    monkeypatch.setattr(work, "analyze_trace", analysed)
    assert check() == first and len(first.splitlines()) == 40
