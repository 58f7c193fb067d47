"""The engine's verdict equals the seed's rule on any bytes, fed in any chunks.

The reference is ``smoldata_tui.trace.seed_rule``: the wrapper's code copied
literally. Traces are generated valid, then mutated in the ways real logs and
hostile inputs go wrong.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from smoldata_tui.trace import TraceAnalysis
from smoldata_tui.trace.seed_rule import seed_outcome

SETTINGS = settings(max_examples=int(__import__("os").environ.get("VERDICT_EXAMPLES", "400")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def engine_outcome(data: bytes, cuts: list[int] | None = None):
    analysis = TraceAnalysis()
    position = 0
    for cut in sorted(cuts or []):
        cut = min(cut, len(data))
        analysis.feed(data[position:cut])
        position = max(position, cut)
    analysis.feed(data[position:])
    return analysis.finish().verdict


def assert_same(data: bytes, cuts: list[int] | None = None) -> None:
    ours = engine_outcome(data, cuts)
    seed = seed_outcome(data)
    assert ours.native_tool_calls == seed.calls, (data[:300], ours, seed)
    seed_exc = seed.caught or seed.crash
    our_exc = ours.failure.exception if ours.failure else None
    assert type(our_exc) is type(seed_exc), (data[:300], our_exc, seed_exc)
    assert (ours.wrapper_crash is not None) == (seed.crash is not None)
    if seed_exc is not None:
        # Same exception, same message: the engine evaluates the seed's own expressions,
        # and a bad byte is placed where decoding the whole log finds it.
        assert ours.reason == f"{type(seed_exc).__name__}: {seed_exc}", (data[:300], ours.reason, seed_exc)


# --- strategies ----------------------------------------------------------------------------------
ids = st.one_of(
    st.sampled_from(["call_0", "call_1", "call_2", "toolu_01", "c"]),
    st.text(min_size=0, max_size=8),
    st.none(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 1), max_size=1),
)
statuses = st.one_of(
    st.sampled_from(["completed", "error", "running", "pending", "", "COMPLETED"]),
    st.none(),
    st.integers(0, 2),
    st.lists(st.just("completed"), max_size=1),
)
safe_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
    max_size=20,
)


@st.composite
def tool_part(draw):
    part: dict = {
        "id": draw(st.sampled_from(["prt_01", "prt_02", "prt_03"])),
        "messageID": "msg_01",
        "sessionID": "ses_1",
        "type": "tool",
        "tool": draw(st.sampled_from(["bash", "read", "write", "invalid"])),
    }
    if draw(st.integers(0, 9)):
        part["callID"] = draw(ids)
    state_kind = draw(st.integers(0, 12))
    if state_kind == 0:
        pass  # no state at all
    elif state_kind == 1:
        part["state"] = draw(st.one_of(st.none(), st.text(max_size=3), st.integers(), st.lists(st.none(), max_size=1)))
    else:
        state: dict = {"input": {"command": draw(safe_text)}, "output": draw(safe_text)}
        if draw(st.integers(0, 9)):
            state["status"] = draw(statuses)
        part["state"] = state
    if not draw(st.integers(0, 15)):
        part = draw(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.none(), max_size=1)))
    return part


@st.composite
def event(draw):
    kind = draw(st.sampled_from(["step_start", "text", "tool_use", "tool_use", "tool_use", "step_finish", "error", "done", None]))
    if kind is None:
        return draw(st.one_of(st.integers(), st.none(), st.text(max_size=4), st.lists(st.integers(), max_size=2), st.floats()))
    value: dict = {"type": kind, "timestamp": draw(st.integers(0, 10**13)), "sessionID": "ses_1"}
    if kind == "tool_use":
        if draw(st.integers(0, 12)):
            value["part"] = draw(tool_part())
    elif kind in ("text", "step_start", "step_finish"):
        value["part"] = {"id": "prt_x", "messageID": "msg_01", "type": kind, "text": draw(safe_text)}
    elif kind == "error":
        value["error"] = {"name": "APIError", "data": {"message": draw(safe_text)}}
    return value


def dump(value: object, style: int) -> str:
    if style == 0:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # how OpenCode writes
    if style == 1:
        return json.dumps(value, ensure_ascii=True)
    return json.dumps(value, indent=None, separators=(", ", ": "), ensure_ascii=False)


# Raw insertions that the standard library accepts or splits differently from strict parsers.
SPLICES = [
    "\u2028", "\u2029", "\x85", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r\n", "\n",
    "\xa0", "\u3000", "\t", " ", "\ufeff",
]
TOKENS = [
    "NaN", "-Infinity", "Infinity", "1e400", "123456789012345678901234567890", "1" * 5000,
    '"\\ud800"', '"\\udfff\\ud800"', "-0", "0.0", "1.0", "true", "null", "[]", "{}", '""',
    "[" * 3000 + "]" * 3000, '{"a":' * 50 + "1" + "}" * 50,
]


@st.composite
def trace_bytes(draw):
    events = draw(st.lists(event(), min_size=0, max_size=10))
    lines = [dump(value, draw(st.integers(0, 2))) for value in events]
    for _ in range(draw(st.integers(0, 4))):
        mutation = draw(st.integers(0, 7))
        if not lines:
            lines.append("")
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        if mutation == 0:  # splice a line-breaking or whitespace character anywhere
            pos = draw(st.integers(0, len(line)))
            lines[at] = line[:pos] + draw(st.sampled_from(SPLICES)) + line[pos:]
        elif mutation == 1:  # cut the line short
            lines[at] = line[: draw(st.integers(0, len(line)))]
        elif mutation == 2:  # a token json accepts and strict parsers reject, as a value
            token = draw(st.sampled_from(TOKENS))
            lines[at] = line.replace('"callID":', f'"callID":{token},"x":', 1) if '"callID":' in line else token
        elif mutation == 3:  # duplicate a line (re-emitted event)
            lines.insert(at, line)
        elif mutation == 4:  # blank or whitespace-only line
            lines.insert(at, draw(st.sampled_from(["", " ", "\t", "\xa0", "\u3000", "\x1f"])))
        elif mutation == 5:  # duplicate keys: the last one wins in json
            lines[at] = line.replace('{"type":', '{"type":"tool_use","type":', 1)
        elif mutation == 6:  # escape sequences in strings
            lines[at] = line.replace('"text":"', '"text":"\\u2028\\u001b[31m\\"', 1)
        else:  # a trailing comma or stray text: invalid JSON
            lines[at] = line + draw(st.sampled_from([",", "x", "}", " // note", "npm warn deprecated"]))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "\n"
    data = text.encode("utf-8", "surrogatepass")
    if not draw(st.integers(0, 9)):  # undecodable bytes somewhere
        pos = draw(st.integers(0, len(data)))
        data = data[:pos] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"])) + data[pos:]
    return data


# --- properties ----------------------------------------------------------------------------------
@SETTINGS
@given(trace_bytes(), st.lists(st.integers(0, 400), max_size=4))
def test_generated_and_mutated_traces(data, cuts):
    assert_same(data, cuts)


@SETTINGS
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=3))
def test_arbitrary_bytes(data, cuts):
    assert_same(data, cuts)


@SETTINGS
@given(st.lists(st.sampled_from([
    b'{"type":"step_finish"}', b'{"type":"tool_use","part":{"callID":"a","state":{"status":"completed"}}}',
    b'{"type":"tool_use","part":{"callID":"b","state":{"status":"running"}}}', b"42", b"[]", b"null",
    b'{"type":"tool_use"}', b'{"type":"tool_use","part":{"state":null,"callID":"c"}}', b"{", b"",
    b'{"type":"tool_use","part":{"callID":1}}', b'{"type":"tool_use","part":{"callID":1.0,"state":{"status":"error"}}}',
    b'{"type":"tool_use","part":{"callID":true,"state":{"status":"error"}}}', b'{"type":"tool_use","part":[]}',
    b'{"type":"tool_use","part":{"callID":["x"],"state":{}}}', b'{"type":"tool_use","part":{"callID":NaN}}',
    b'{"type":"tool_use","part":{"callID":"d","state":{"status":["completed"]}}}', b"\xff", b"\xe2\x80\xa8",
    b'{"type":"text","part":{"text":"a\xe2\x80\xa8b"}}', b'{"type":"step_finish"}\r{"type":"text"}',
]), max_size=8))
def test_phase_interactions(lines):
    # Small vocabulary, many orders: which phase's failure wins must match the seed.
    assert_same(b"\n".join(lines) + b"\n")


@example(b"")
@example(b"\n\n \n")
@example(b'{"type":"step_finish"}')
@example(b"\xef\xbb\xbf" + b'{"type":"step_finish"}\n')
@example(b'{"type":"step_finish"}\r\n')
@example(b'{"type":"tool_use","part":{"callID":123456789012345678901234567890,"state":{"status":"completed"}}}\n'
         b'{"type":"tool_use","part":{"callID":1.2345678901234568e+29,"state":{"status":"completed"}}}\n'
         b'{"type":"step_finish"}\n')
@example(b"[" * 5000 + b"]" * 5000 + b'\n{"type":"step_finish"}\n')
@example(b'{"type":"step_finish","n":' + b"9" * 5000 + b"}\n")
@example(b'{"type":"tool_use","part":{"callID":"x","state":{"status":"completed"}}}\n\x1c\n{"type":"step_finish"}\n')
@example(b'{"type":"step_finish"}\n{"type":"text","part":{"text":"' + b"x" * 300 + b'\xff"}}\n')  # position in the log
@example(b'{"type":"step_finish"}\n{"a":"\xe2\x82\n{"b":1}\n')  # a character cut by the newline
@example(b'{"type":"step_finish"}\n\xe2\x82')  # ... and by the end of the log
@example(b'{"type":"step_finish"}\n\xed\n')
@example(b'{"type":"step_finish"}\n\xf0\x90\x80\r\n')
@example(b'{"type":"step_finish"}\n"' + b"a" * 70_000 + b'\xe2\x82\n')  # a huge line
@given(st.just(b""))
def test_known_edges(data):
    assert_same(data)


def test_chunking_never_changes_anything():
    data = (
        b'{"type":"step_start","part":{"messageID":"m"}}\n'
        b'{"type":"tool_use","part":{"callID":"a","state":{"status":"completed","output":"\xc3\xa9\xe2\x80\x94"}}}\n'
        b'{"type":"step_finish","part":{"messageID":"m"}}\n'
    )
    whole = engine_outcome(data)
    for cut in range(len(data) + 1):
        assert engine_outcome(data, [cut]) == whole
    byte_by_byte = TraceAnalysis()
    for i in range(len(data)):
        byte_by_byte.feed(data[i : i + 1])
    assert byte_by_byte.finish().verdict == whole
    assert whole.native_tool_calls == 1
