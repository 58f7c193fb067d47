"""Numbers json.loads accepts but no cost or count is (NaN, Infinity, 1e309, hundreds of digits):
a cached result is the fresh one for every input, and nothing crashes on them.

The property runs the real ``check`` (``run_check``, what the CLI calls) over every shipped sample
and generated episodes with odd values put into their cost, token and time fields and into their
``run.meta.json``: cold, then twice from the cache, with and without ``--summary``. The fleet table
(the real app through Pilot) opens such a folder cold and cached and shows the same rows.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldata_tui.commands.check import run_check
from smoldata_tui.fleet.build import write_fleet
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.fleet.work import summarize_episode
from smoldata_tui.store.metadata import is_trace_name
from smoldata_tui.trace.analysis import analyze_bytes

from .conftest import SAMPLES

ODD = ["NaN", "Infinity", "-Infinity", "1e309", "-1e309", "-0.0", "-0", "1e300", "-1e300", "9007199254740993",
       "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890", "1e19"]  # fmt: skip
# Every number a result reads: a step's cost and tokens, an event's and a call's times, and run.meta.json's.
NUMBER = re.compile(
    rb'"(cost|input|output|reasoning|read|write|total|timestamp|start|end|created|completed'
    rb'|env_reward|correctness|exit_code|agent|grading|setup)":\s*(-?[0-9][0-9.eE+-]*)'
)
SOURCES = sorted(path for path in SAMPLES.rglob("*.jsonl") if is_trace_name(path.name))


class Out(io.StringIO):
    def __init__(self):
        super().__init__()
        self.buffer = io.BytesIO()


def check(folder: Path, *, summary: bool, use_cache: bool = True, as_json: bool = True) -> tuple[int, bytes]:
    out = Out()
    status = run_check([str(folder)], as_json=as_json, strict=False, summary=summary, out=out, use_cache=use_cache)
    return status, out.buffer.getvalue() + out.getvalue().encode()


def oddly(data: bytes, draw) -> bytes:
    """``data`` with up to four of its numbers replaced by odd ones."""
    found = list(NUMBER.finditer(data))
    if not found:
        return data
    picked = draw(st.lists(st.tuples(st.sampled_from(found), st.sampled_from(ODD)), max_size=4))
    for match, value in sorted(picked, key=lambda item: item[0].start(2), reverse=True):
        data = data[: match.start(2)] + value.encode() + data[match.end(2) :]
    return data


@st.composite
def episodes(draw) -> tuple[str, dict[str, bytes]]:
    """A trace and the files beside it, as (trace name, {file name: bytes}), oddly numbered."""
    source = draw(st.sampled_from([None, *SOURCES]))
    if source is None:  # a generated episode, with run.meta.json
        folder = Path(tempfile.mkdtemp())
        try:
            trace = write_fleet(folder, 1, seed=draw(st.integers(0, 10**6)), defect_rate=0.3, with_metadata=1.0)[0]
            files = {path.name: path.read_bytes() for path in trace.parent.iterdir()}
        finally:
            shutil.rmtree(folder)
        name = trace.name
    else:
        name = source.name
        stem = name[: -len(".jsonl")]
        files = {path.name: path.read_bytes() for path in source.parent.iterdir() if path.name.startswith(stem + ".")}
    return name, {file: oddly(data, draw) for file, data in files.items()}


def age(folder: Path) -> None:
    past = time.time_ns() - 3600 * 10**9  # older than the cache's settling time
    for path in folder.rglob("*"):
        os.utime(path, ns=(past, past))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(episode=episodes())
def test_a_cached_check_prints_the_bytes_of_a_fresh_one_whatever_the_numbers(episode):
    name, files = episode
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "episodes"
        folder.mkdir()
        for file, data in files.items():
            (folder / file).write_bytes(data)
        age(folder)
        os.environ["XDG_CACHE_HOME"] = str(Path(work) / "cache")
        try:
            for summary in (False, True):
                fresh = check(folder, summary=summary, use_cache=False)
                assert check(folder, summary=summary) == fresh  # cold: analysed, then kept
                assert check(folder, summary=summary) == fresh  # served from the cache
                for line in fresh[1].splitlines():
                    orjson.loads(line)  # strict JSON: no NaN, no Infinity
            assert list((Path(work) / "cache" / "smoldata-tui" / "check").glob("*.json"))  # it was cached
            for summary in (False, True):  # the table for people does not crash either
                check(folder, summary=summary, as_json=False, use_cache=False)
            kept = summarize_episode(str(folder / name))
            assert EpisodeSummary.from_row(orjson.loads(orjson.dumps(kept.to_row()))) == kept
        finally:
            del os.environ["XDG_CACHE_HOME"]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e309", "123456789012345678901234567890",
                                   '"yesterday"', "true", "[1]", '{"ms": 1}'])  # fmt: skip
def test_a_number_that_is_no_cost_is_left_out_and_said(value):
    step = (b'{"type":"step_start","timestamp":1,"part":{"messageID":"m"}}\n'
            b'{"type":"step_finish","timestamp":' + value.encode() + b',"part":{"messageID":"m","cost":'
            + value.encode() + b',"tokens":{"input":' + value.encode() + b',"output":5}}}\n'
            b'{"type":"step_start","timestamp":3,"part":{"messageID":"n"}}\n'
            b'{"type":"step_finish","timestamp":4,"part":{"messageID":"n","cost":0.5,"tokens":{"input":7,"output":1}}}\n')  # fmt: skip
    report, _ = analyze_bytes(step)
    stats = report.stats.to_json()
    assert stats["cost"] == 0.5 and stats["tokens"]["input"] == 7 and stats["tokens"]["output"] == 6
    assert stats["wall_time_ms"] == 3  # from the first counted timestamp to the last
    said = [(f.line, f.kind, f.severity.value) for f in report.findings if f.kind == "bad_number"]
    assert said == [(2, "bad_number", "warning")] * 3  # the timestamp, the tokens, the cost
    messages = " ".join(f.message for f in report.findings if f.kind == "bad_number")
    assert "cost is " in messages and "tokens.input is " in messages and "timestamp is " in messages
    assert report.verdict.native_tool_calls == 0  # the wrapper's verdict does not look at numbers


def test_metadata_numbers_past_what_json_holds_are_a_problem_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "fleet"
    trace = write_fleet(folder, 1, seed=3, defect_rate=0.0, with_metadata=1.0)[0]
    meta = trace.with_name("run.meta.json")
    meta.write_bytes(re.sub(rb'"env_reward": [0-9.]+', b'"env_reward": 1180591620717411303424', meta.read_bytes()))
    age(folder)
    fresh = check(folder, summary=True, use_cache=False)
    assert check(folder, summary=True) == fresh == check(folder, summary=True)
    summary = summarize_episode(str(trace))
    assert summary.env_reward is None and "env_reward should be a finite number" in summary.meta_error
