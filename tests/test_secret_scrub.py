"""The endpoint key never reaches a saved trace, even when the agent prints it: masked in the
stream across any chunk boundary, length kept (so the verdict and offsets do not move)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.session.model_endpoint import open_endpoint
from smoldata_tui.session.secret_scrub import SecretScrubber
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace.build import TraceBuilder

from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import Recorder, sandbox_dirs, sandboxes  # noqa: F401 - a fixture

SECRET = "sk-live-0123456789abcdef"


@settings(max_examples=300, deadline=None)
@given(
    before=st.binary(max_size=40),
    after=st.binary(max_size=40),
    copies=st.integers(min_value=0, max_value=3),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_any_chunking_gives_the_masked_stream(before, after, copies, cuts):
    stream = before + (SECRET.encode() + b"x") * copies + after
    scrubber = SecretScrubber([SECRET])
    points = sorted({min(cut, len(stream)) for cut in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    out = b"".join(scrubber.feed(piece) for piece in pieces) + scrubber.flush()
    expected = stream.replace(SECRET.encode(), b"*" * len(SECRET))
    cut = next((n for n in range(len(SECRET) - 1, 7, -1) if expected.endswith(SECRET.encode()[:n])), 0)
    if cut:  # the stream ends inside the secret: that much of it is masked too
        expected = expected[:-cut] + b"*" * cut
    assert out == expected
    assert SECRET.encode() not in out and len(out) == len(stream)


def test_nothing_is_held_back_unless_it_may_start_the_secret():
    scrubber = SecretScrubber([SECRET])
    assert scrubber.feed(b'{"type":"text"}\n') == b'{"type":"text"}\n'  # a live row is never delayed
    assert scrubber.feed(b"key sk-li") == b"key "
    assert scrubber.feed(b"ve-0123456789abcdef!") == b"*" * len(SECRET) + b"!"
    assert SecretScrubber(["EMPTY"]).feed(b"EMPTY") == b"EMPTY"  # placeholders are not secrets


def test_a_secret_cut_off_at_the_end_of_the_stream_is_masked():
    scrubber = SecretScrubber([SECRET])
    assert scrubber.feed(b'"apiKey": "' + SECRET.encode()[:12]) == b'"apiKey": "'
    assert scrubber.flush() == b"*" * 12  # the agent was killed mid-print: half a key is still a leak
    scrubber.feed(b"x sk-l")
    assert scrubber.flush() == b"sk-l"  # too short to give anything away, and may be ordinary text


def test_an_agent_that_prints_the_key_leaves_no_trace_of_it(tmp_path, sandboxes, opencode_bin):
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("cat /root/.config/opencode/opencode.json", "(recorded elsewhere)\n")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    recording = tmp_path / "leak.jsonl"
    recording.write_bytes(builder.dumps())
    endpoint = open_endpoint(model=f"replay:{recording}")
    endpoint.api_key = SECRET  # the replay model does not check keys: any key will do
    recorder = Recorder()
    task = load_task(default_task_root() / "sales-top-region")
    result = Episode(EpisodeSpec(task=task, endpoint=endpoint, timeout_s=120, save_dir=tmp_path / "runs"), recorder).run()
    trace = result.trace_path.read_bytes()
    assert b'apiKey\\": \\"' + b"*" * len(SECRET) in trace  # the agent did print the config (JSON in JSON)
    assert analyze_bytes(trace)[0].verdict.native_tool_calls == 1
    for path in result.trace_path.parent.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET.encode() not in bytes(recorder.bytes)
    assert all(SECRET not in message for _, _, message in recorder.stages)
    assert json.loads(result.metadata_path.read_text())["status"] == "finished"
    assert sandbox_dirs(sandboxes) == []
