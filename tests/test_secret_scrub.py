"""The endpoint key never reaches a saved trace, even when the agent prints it: masked in the
stream across any chunk boundary, length kept (so the verdict and offsets do not move). The live
episodes run the stand-in OpenCode (tests/standin_agent): the masking is ours, not OpenCode's."""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.masking import SecretScrubber
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace.build import TraceBuilder

from .test_episode_caps import one_call_recording
from .test_ui_helpers import loaded, replay_app, screen_lines
from .test_episode_local import Recorder, sandbox_dirs, standin_sandboxes  # noqa: F401 - a fixture

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


def test_an_agent_that_prints_the_key_leaves_no_trace_of_it(tmp_path, standin_sandboxes):
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
    result = Episode(EpisodeSpec(task=task, endpoint=endpoint, timeout_s=300, save_dir=tmp_path / "runs"), recorder).run()
    trace = result.trace_path.read_bytes()
    assert b'apiKey\\": \\"' + b"*" * len(SECRET) in trace  # the agent did print the config (JSON in JSON)
    assert analyze_bytes(trace)[0].verdict.native_tool_calls == 1
    for path in result.trace_path.parent.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    assert SECRET.encode() not in bytes(recorder.bytes)
    assert all(SECRET not in message for _, _, message in recorder.stages)
    assert json.loads(result.metadata_path.read_text())["status"] == "finished"
    assert sandbox_dirs(standin_sandboxes) == []


HARD_KEY = 'sk-"quo\\ted-é\x01-0123456789'  # JSON escapes its quote, backslash and control; ascii mode its é


def test_every_json_form_of_the_key_is_masked_in_text_and_in_the_stream_at_any_depth():
    scrubber = SecretScrubber([HARD_KEY])
    forms = [HARD_KEY]
    for _ in range(3):
        forms = [json.dumps(form, ensure_ascii=flag)[1:-1] for form in forms for flag in (False, True)] + forms
    for form in set(forms):
        text = f'{{"out": "before {form} after"}}'
        masked = scrubber.text(text)
        assert masked == text.replace(form, "*" * len(form)), form
        stream = text.encode()
        fed = b"".join(scrubber.feed(stream[i : i + 3]) for i in range(0, len(stream), 3)) + scrubber.flush()
        assert fed == stream.replace(form.encode(), b"*" * len(form.encode())), form
    upper = json.dumps(HARD_KEY)[1:-1].replace("\\u00e9", "\\u00E9")
    assert "*" * len(upper) in scrubber.text(upper)


def test_a_masked_json_document_stays_the_same_json_with_the_key_masked():
    document = json.dumps({"grader_output": json.dumps({"got": HARD_KEY}), "key": HARD_KEY}, indent=2)
    masked = json.loads(SecretScrubber([HARD_KEY]).text(document))
    assert set(masked) == {"grader_output", "key"} and set(masked["key"]) == {"*"}
    assert HARD_KEY not in json.loads(masked["grader_output"])["got"]


async def test_the_key_the_agent_writes_into_its_answer_reaches_no_saved_file_and_no_screen(tmp_path, standin_sandboxes):
    command = "python3 -c \"import json; print(json.load(open('/root/.config/opencode/opencode.json'))['provider']['intercepted']" \
              "['options']['apiKey'])\" > /workdir/answer.txt; cat /workdir/answer.txt"
    recording = one_call_recording(tmp_path, command)
    endpoint = open_endpoint(model=f"replay:{recording}")
    endpoint.api_key = HARD_KEY
    recorder = Recorder()
    # A grader that echoes the answer, as the sample graders do in "got".
    task = load_task(default_task_root() / "sales-top-region")
    # Without capture the endpoint's key is in the sandbox's opencode.json, where the agent reads it
    # (with capture only the capture session's id is there). A key with é cannot be sent as a header
    # through the capture proxy: the CLI refuses it (test below).
    spec = EpisodeSpec(task=task, endpoint=endpoint, timeout_s=300, save_dir=tmp_path / "runs", capture=False)
    episode = Episode(spec, recorder)
    result = await asyncio.to_thread(episode.run)
    assert result.grade is not None and result.grade.report is not None, result.grade
    got = result.grade.report.get("got", "")
    assert set(got.strip()) == {"*"}, got  # the grader saw the key and echoed it: masked on the way out
    leaks = _forms(HARD_KEY) + [HARD_KEY[-10:]]
    for path in result.trace_path.parent.iterdir():
        text = path.read_text(errors="replace")
        assert not [form for form in leaks if form in text], path
    meta = json.loads(result.metadata_path.read_text())
    assert meta["grade"]["grader_output"] and set(meta["grade"]["grader_output"]) & {"*"}
    shown = json.dumps([result.grade.grader_output, result.grade.grader_error, result.grade.report], ensure_ascii=False)
    assert not [form for form in leaks if form in shown]
    assert all(not [form for form in leaks if form in message] for _, _, message in recorder.stages)
    app = replay_app(result.trace_path)
    async with app.run_test(size=(160, 60)) as pilot:
        await loaded(pilot)
        await pilot.press("4")  # the episode tab: its grade and the grader's output
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(app))
    assert "Grader output" in shown or "grader" in shown.lower(), shown
    assert "*" * 10 in shown and not [form for form in leaks if form in shown], shown


def _forms(key: str) -> list[str]:
    forms = [key]
    for _ in range(2):
        forms = [json.dumps(form, ensure_ascii=flag)[1:-1] for form in forms for flag in (False, True)] + forms
    return sorted(set(forms))


def test_a_key_no_http_header_can_carry_is_a_usage_error_not_a_crash_in_the_proxy(cli):
    done = cli("run", "--headless", "--task", "sales-top-region", "--model", "org/m", "--base-url",
               "http://127.0.0.1:9/v1", "--api-key", HARD_KEY, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("the API key has characters an HTTP header cannot carry (only printable ASCII)")
    assert "Traceback" not in done.stderr and HARD_KEY not in done.stderr + done.stdout


# --- the key spelt out: invisible characters between its letters, broken across lines, its hex ----
def _tool(*command: str, key: str = SECRET) -> str:
    import subprocess

    return subprocess.run(command, input=key.encode(), capture_output=True, check=True).stdout.decode()


INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u202e", "\ufe0f"]
SPELT = {  # what real tools print: each must be masked whole
    **{f"fold -w {width}": _tool("fold", "-w", str(width)) for width in (1, 3, 8, 13)},
    "fold, CRLF": _tool("fold", "-w", "8").replace("\n", "\r\n"),
    "xxd -p": _tool("xxd", "-p"),
    "xxd -p -c 5": _tool("xxd", "-p", "-c", "5"),
    "od -An -tx1": _tool("od", "-An", "-tx1"),
    "od -tx1": _tool("od", "-tx1"),  # from the key's first byte to its last: the offsets around are no secret
    "od -c": _tool("od", "-c"),
    "hex": SECRET.encode().hex(),
    "HEX": SECRET.encode().hex().upper(),
}


@st.composite
def spelt_keys(draw) -> str:
    """The key as a tool prints it, or with invisible characters between its letters."""
    if draw(st.booleans()):
        printed = SPELT[draw(st.sampled_from(sorted(SPELT)))]
        first, last = ("s", "f") if "   s" in printed else ("73", "66") if "73" in printed.lower() else (SECRET[0], SECRET[-1])
        return printed[printed.lower().index(first) : printed.lower().rindex(last) + len(last)]
    marks = draw(st.lists(st.tuples(st.integers(1, len(SECRET) - 1), st.sampled_from(INVISIBLES)), min_size=1, max_size=6))
    letters = list(SECRET)
    for place, mark in sorted(marks, reverse=True):
        letters.insert(place, mark)
    return "".join(letters)


@settings(max_examples=300, deadline=None)
@given(spelt=spelt_keys(), depth=st.integers(0, 2), ascii_only=st.booleans(),
       before=st.text(max_size=20), after=st.text(max_size=20), cuts=st.lists(st.integers(0, 400), max_size=6))  # fmt: skip
def test_a_key_spelt_out_is_masked_whole_at_any_json_depth_across_any_chunking(spelt, depth, ascii_only, before, after, cuts):
    form = spelt
    for _ in range(depth):  # a trace writes a tool's output as a JSON string, maybe quoted again
        form = json.dumps(form, ensure_ascii=ascii_only)[1:-1]
    stream = (before + " " + form + " " + after).encode()
    start = len((before + " ").encode())
    end = start + len(form.encode())
    one_go = SecretScrubber([SECRET])
    whole = one_go.feed(stream) + one_go.flush()
    assert set(whole[start:end]) == {ord("*")}, (form, whole)
    assert len(whole) == len(stream)
    scrubber = SecretScrubber([SECRET])
    points = sorted({min(cut, len(stream)) for cut in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    assert b"".join(scrubber.feed(piece) for piece in pieces) + scrubber.flush() == whole
    text = before + " " + form + " " + after
    assert set(SecretScrubber([SECRET]).text(text)[len(before) + 1 : len(before) + 1 + len(form)]) == {"*"}


def test_spellings_hold_back_only_what_may_continue_a_spelling():
    scrubber = SecretScrubber([SECRET])
    assert scrubber.feed(b'{"type":"text","text":"fine"}\n') == b'{"type":"text","text":"fine"}\n'
    assert scrubber.feed(b"a sk-l\\n") == b"a "  # may go on as a folded key
    assert scrubber.feed(b"ive-0123456789abcdef. ok") == b"*" * (len(SECRET) + 2) + b". ok"
    assert scrubber.feed(b"73 6b 2d") == b""  # may be the key's bytes in hex
    assert scrubber.feed(b" 99\n") == b"73 6b 2d 99\n"  # it was not


def test_what_is_not_caught_is_what_the_docs_say():
    """docs/episode-format.md lists these as not recognised: the test keeps that list true."""
    import base64

    scrubber = SecretScrubber([SECRET])
    for leak in (_tool("xxd"), _tool("hexdump", "-C"), base64.b64encode(SECRET.encode()).decode(), SECRET[::-1], _tool("od", "-x"),
                 "-".join(SECRET), "".join(chr(0xE0000 + ord(c)) for c in SECRET)):  # fmt: skip
        assert scrubber.text(leak) == leak


def test_an_agent_that_spells_the_key_out_leaves_no_trace_of_it(tmp_path, standin_sandboxes):  # noqa: F811
    read = "python3 -c \"import json; print(json.load(open('/root/.config/opencode/opencode.json'))['provider']['intercepted']['options']['apiKey'], end='')\""
    command = (f"{read} | fold -w 8; {read} | xxd -p; {read} | od -An -tx1; "
               f"{read} | python3 -c \"import sys; print(chr(0x200b).join(sys.stdin.read()))\"")  # fmt: skip
    recording = one_call_recording(tmp_path, command)
    endpoint = open_endpoint(model=f"replay:{recording}")
    endpoint.api_key = SECRET
    task = load_task(default_task_root() / "sales-top-region")
    spec = EpisodeSpec(task=task, endpoint=endpoint, timeout_s=300, save_dir=tmp_path / "runs", capture=False)
    result = Episode(spec, Recorder()).run()
    trace = result.trace_path.read_text()
    assert "*" * 8 + "\\n" + "*" * 8 in trace  # the agent did print it, folded: masked whole
    leaks = [SECRET[:8], SECRET[8:16], SECRET[-8:], SECRET.encode().hex()[:12], "73 6b 2d"]
    for path in result.trace_path.parent.iterdir():
        text = path.read_text(errors="replace")
        assert not [leak for leak in leaks if leak in text], (path, [leak for leak in leaks if leak in text])
