"""A trace analysed in parts (in other processes) and merged equals one sequential pass."""

from __future__ import annotations

import pickle
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.build_episode import realistic_episode
from smoldata_tui.trace.parallel import analyze_part, analyze_path_parallel, split_points

from .test_verdict_matches_seed import trace_bytes


def canonical(report):
    verdict = report.verdict
    exc = verdict.failure.exception if verdict.failure else None
    findings = sorted(
        (f.line or 0, f.event or -1, f.kind, f.severity.value, f.message, f.related_line or 0)
        for f in report.findings
    )
    return (
        verdict.native_tool_calls,
        type(exc).__name__ if exc else None,
        str(exc) if exc and not isinstance(exc, UnicodeDecodeError) else None,
        verdict.failure.line if verdict.failure else None,
        findings,
        report.stats.to_json(),
        report.events,
        report.lines,
        report.bytes,
    )


def merged_at(path, data: bytes, cuts: list[int]):
    newline_ends = sorted({i + 1 for i, byte in enumerate(data) if byte == 0x0A})
    points = sorted({0, len(data), *(newline_ends[c % len(newline_ends)] for c in cuts if newline_ends)})
    ranges = list(zip(points, points[1:])) or [(0, 0)]
    parts = [
        pickle.loads(pickle.dumps(analyze_part(str(path), start, end, index == len(ranges) - 1)))
        for index, (start, end) in enumerate(ranges)
    ]
    whole = parts[0]
    for part in parts[1:]:
        whole.merge(part)
    return whole.finish()


@st.composite
def episodes(draw):
    """Healthy and damaged episodes, and several sessions in one file."""
    rng = random.Random(draw(st.integers(0, 10**6)))
    data = b""
    for session in range(draw(st.integers(1, 3))):
        builder = TraceBuilder(session_id=f"ses_{session}", start_ms=1767225600000 + session * 5000)
        realistic_episode(builder, steps=draw(st.integers(1, 6)), rng=rng, output_bytes=200)
        kept = []
        for event in builder.events:  # damage some events the ways real logs go wrong
            roll = rng.random()
            part = event.get("part", {})
            if roll < 0.05 and "callID" in part:
                part["callID"] = "call_dup"
            elif roll < 0.08:
                event["timestamp"] -= 100000
            elif roll < 0.10 and event["type"] == "step_start":
                part["messageID"] = "msg_shared"
            elif roll < 0.14 and event["type"] == "step_finish":
                part["reason"] = rng.choice(["unknown", "length"])  # a dropped stream, a cut-off answer
            elif roll < 0.20 and event["type"] in ("text", "reasoning", "tool_use"):
                continue  # left out: some steps become empty answers
            kept.append(event)
        builder.events[:] = kept
        data += builder.dumps()
        if draw(st.booleans()):
            data += draw(st.sampled_from([b"npm warn x\n", b"\n", b'{"type":"done"}\n', b"42\n"]))
    return data


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.one_of(trace_bytes(), episodes()), st.lists(st.integers(0, 10**6), max_size=4))
def test_parts_merged_equal_one_pass(tmp_path_factory, data, cuts):
    path = tmp_path_factory.mktemp("parts") / "trace.jsonl"
    path.write_bytes(data)
    sequential, _ = analyze_bytes(data)
    assert canonical(merged_at(path, data, cuts)) == canonical(sequential)


def test_split_points_fall_after_newlines(tmp_path):
    path = tmp_path / "t.jsonl"
    data = b"".join(b'{"n":%d}\n' % i for i in range(1000)) + b"tail"
    path.write_bytes(data)
    points = split_points(path, 4)
    assert points[0] == 0 and points[-1] == len(data) and points == sorted(points)
    assert len(points) == 5
    assert all(data[p - 1 : p] == b"\n" for p in points[1:-1])
    assert split_points(tmp_path.joinpath("t.jsonl"), 1) == [0, len(data)]


def test_big_file_in_processes_equals_one_pass(tmp_path, monkeypatch):
    from smoldata_tui.trace import parallel

    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    builder = TraceBuilder()
    realistic_episode(builder, steps=300, rng=random.Random(7), output_bytes=300)
    data = builder.dumps()
    data = data.replace(b'"callID":"call_', b'"callID":"call_x', 1)  # still unique, just different
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    sequential, _ = analyze_bytes(data)
    assert canonical(analyze_path_parallel(path, workers=3)) == canonical(sequential)
    assert sequential.verdict.native_tool_calls > 250


def test_nan_call_ids_in_two_parts_are_one_repeated_id(tmp_path):
    # json.loads returns one shared NaN object, so the wrapper's set() holds it once.
    line = b'{"type":"tool_use","part":{"callID":NaN,"state":{"status":"completed"}}}\n'
    data = line + line.replace(b"NaN", b'"x"') + line + b'{"type":"step_finish"}\n'
    path = tmp_path / "nan.jsonl"
    path.write_bytes(data)
    sequential, _ = analyze_bytes(data)
    assert sequential.verdict.reason == "ValueError: Missing or repeated tool action IDs"
    merged = merged_at(path, data, [1])  # cut after the second line
    assert canonical(merged) == canonical(sequential)


def test_lines_before_counts_dense_and_sparse_windows(tmp_path, monkeypatch):
    from smoldata_tui.trace import parallel

    monkeypatch.setattr(parallel, "_WINDOW", mmap_granularity())
    monkeypatch.setattr(parallel, "_SPARSE", 5)
    data = b"x" * 70000 + b"\n" * 9000 + b"y\n" * 3 + b"z" * 5000 + b"\n"
    path = tmp_path / "lines.jsonl"
    path.write_bytes(data)
    with path.open("rb") as handle:
        for offset in (0, 1, 70000, 70001, 79000, 79003, len(data) - 1, len(data)):
            assert parallel._lines_before(handle, offset) == data[:offset].count(b"\n")


def mmap_granularity() -> int:
    import mmap

    return mmap.ALLOCATIONGRANULARITY
