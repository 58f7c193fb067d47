"""A line too long to hold is streamed past, and the verdict stays the wrapper's exactly.

The thresholds are lowered here (a 300-byte "huge" line, a 200-byte kept head) so that hypothesis
can explore every shape around them; the rule itself is unchanged: the verdict, the exception type
and its message must equal the seed's on the same bytes, fed in any chunks. Then the real sizes:
a 64 MiB line of control characters and a newline-free sparse file keep memory bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from smoldata_tui.trace import reader
from smoldata_tui.trace.parse import huge_line_error

from .test_verdict_matches_seed import SETTINGS, assert_same, trace_bytes

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    monkeypatch.setattr(reader, "HUGE_LINE_BYTES", 300)
    monkeypatch.setattr(reader, "HUGE_PREFIX_BYTES", 200)


json_ish = st.sampled_from([
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\\ud83d", b"\\udc00", b"0", b"-", b"1.5e3", b"true",
    b"nul", b"null", b"NaN", b"-Infinity", b" ", b"\t", b"\r", b"\x0b", b"\x1c", b"\x1f", b"\x00", b"\x01", b"\x1b",
    b"a", b"\xc3\xa9", b"\xe2\x80\xa8", b"\xc2\x85", b"\xff", b"\xc3", b'"type"', b'{"type":"step_finish"}',
])


@st.composite
def long_line(draw):
    """A line past the (lowered) huge threshold: JSON-like tokens, then filler."""
    head = b"".join(draw(st.lists(json_ish, max_size=60)))
    filler = draw(st.sampled_from([b"\x00", b"a", b" ", b"x\x01", b'"', b"[", b"0", b"\xc3\xa9", b"\\n"]))
    count = draw(st.integers(150, 600))
    tail = b"".join(draw(st.lists(json_ish, max_size=10)))
    return head + filler * count + tail


@st.composite
def traces_with_long_lines(draw):
    lines = draw(st.lists(st.one_of(long_line(), st.just(b'{"type":"step_finish"}')), min_size=1, max_size=4))
    base = draw(trace_bytes())
    position = draw(st.integers(0, len(base)))
    cut = base.rfind(b"\n", 0, position) + 1
    ending = draw(st.sampled_from([b"\n", b""]))
    return base[:cut] + b"\n".join(lines) + ending + (b"\n" + base[cut:] if ending and base[cut:] else b"")


@SETTINGS
@given(traces_with_long_lines(), st.integers(1, 97))
@example(b"\x00" * 1000, 64)
@example(b'{"type":"step_finish"}\n' + b"\x00" * 1000, 7)
@example(b'[' * 150 + b"\x00" * 400, 50)
@example(b'{"a":"' + b"x" * 400 + b'\x00"}\n{"type":"step_finish"}\n', 33)
@example(b'{"a":"\\ud83d\\u' + b"\x00" * 400, 10)
@example(b"\x01\x0b\x02" * 200 + b"\xff", 100)
@example(b'"' + b"a" * 400 + b"\xe2\x82\n{\"type\":\"step_finish\"}\n", 64)  # cut by the newline: the log's message
def test_long_lines_keep_the_seeds_verdict(data, chunk):
    """Fed in small chunks, as a log arrives: long lines are pending, so the huge path is taken."""
    assert_same(data, list(range(chunk, len(data), chunk)))


@SETTINGS
@given(st.binary(max_size=250), st.binary(min_size=1, max_size=300))
def test_a_decided_head_decides_every_line_that_starts_with_it(head, rest):
    """The core claim, directly: whatever follows a deciding head, json.loads fails the same way."""
    decided, error = huge_line_error(head)
    if not decided or error is None:
        return
    line = head + rest.replace(b"\n", b" ")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return  # decoding fails first: the engine checks the whole line for that
    for piece in text.splitlines():
        if piece.strip():
            try:
                json.loads(piece)
            except BaseException as exc:  # noqa: BLE001 - comparing what the wrapper would see
                assert (type(exc), str(exc)) == (type(error), str(error))
                return
    raise AssertionError(f"{line!r} parses but its head {head!r} was decided as {error!r}")


PROBE = """
import sys, time
sys.path.insert(0, {root!r})
from smoldata_tui.trace import analyze_path
started = time.monotonic()
report, _ = analyze_path({path!r}, keep_events=True)
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(report.verdict.native_tool_calls, type(report.verdict.failure.exception).__name__, report.events, peak)
"""


@pytest.mark.parametrize("shape", ["control characters", "sparse, no newline"])
def test_a_64_mib_line_is_analysed_in_bounded_memory(tmp_path, shape):
    path = tmp_path / "huge.jsonl"
    size = 64 << 20
    if shape == "sparse, no newline":
        with open(path, "wb") as handle:
            handle.truncate(size)
    else:
        path.write_bytes(b'{"type":"step_finish"}\n' + bytes(range(1, 9)) * (size // 8) + b"\n")
    done = subprocess.run([sys.executable, "-c", PROBE.format(root=str(ROOT), path=str(path))],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls, exception, events, peak_kb = done.stdout.split()
    assert (calls, exception) == ("None", "JSONDecodeError")
    assert int(peak_kb) < 150_000, f"{peak_kb} kB to analyse a 64 MiB line"


VIEWER_PROBE = """
import asyncio, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.test_ui_helpers import loaded, replay_app, screen_lines

def peak_kb():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))

async def view():
    app = replay_app(Path({path!r}))
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G", "enter")  # the last row (the huge line), its detail
        deadline = time.monotonic() + 30
        while "showing the first" not in "\\n".join(screen_lines(app)) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        print("SHOWN", [line for line in screen_lines(app) if "showing the first" in line][:1])

async def quit_at_once():
    app = replay_app(Path({path!r}))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.3)  # it is reading
        started = time.monotonic()
        await pilot.press("q")
    print("QUIT_S", time.monotonic() - started)

asyncio.run(quit_at_once() if {quit!r} else view())
print("PEAK", peak_kb())
"""


def _viewer(path: Path, *, quit: bool) -> dict[str, str]:
    code = VIEWER_PROBE.format(root=str(ROOT), path=str(path), quit=quit)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines() if " " in line}


def test_the_viewer_shows_a_64_mib_line_clipped_with_its_size_in_bounded_memory(tmp_path):
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b'{"type":"step_start","timestamp":1}\n' + bytes(range(1, 9)) * (8 << 20) + b"\n")
    shown = _viewer(path, quit=False)
    assert "line 2: 64 MiB, showing the first 64 KiB" in shown["SHOWN"]
    assert int(shown["PEAK"]) < 500_000, f"{shown['PEAK']} kB to view a 64 MiB line"


def test_quitting_the_viewer_while_it_reads_a_2_gib_sparse_file_is_prompt_and_bounded(tmp_path):
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(2 << 30)
    shown = _viewer(path, quit=True)
    assert float(shown["QUIT_S"]) < 20
    assert int(shown["PEAK"]) < 500_000, f"{shown['PEAK']} kB on a 2 GiB sparse file"
