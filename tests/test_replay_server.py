"""The replay model's HTTP side, over real sockets on 127.0.0.1: wire format, turn matching,
side requests, divergence reports."""

from __future__ import annotations

import http.client
import json
import threading
from urllib.parse import urlsplit

import pytest

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import END_OF_RECORDING_TEXT, TITLE_TEXT, ReplayServer
from smoldata_tui.trace.build import TraceBuilder

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
SYSTEM = {"role": "system", "content": "You are opencode.\n<env>\n  Working directory: /tmp/now/workdir\n</env>"}
USER = {"role": "user", "content": '"Find the top region"'}


def two_step_recording() -> bytes:
    b = TraceBuilder()
    b.step_start()
    b.reasoning("The CSV is in input/.")
    b.text("Let me look at the input, then write the answer down.")
    b.bash("cat input/sales.csv", "region,revenue\nWest,1177.85\n", call_id="call_cat")
    b.tool("read", {"filePath": "notes.txt"}, "<path>/root/workdir/notes.txt</path>\n1: hi", call_id="call_read")
    b.step_finish("tool-calls", input_tokens=1200, output_tokens=40, reasoning_tokens=7, cache_read=300)
    b.step_start()
    b.text("West.")
    b.step_finish("stop")
    return b.dumps()


@pytest.fixture
def server(tmp_path):
    script = ReplayScript.from_trace(two_step_recording())
    with ReplayServer(script, divergence_path=tmp_path / "divergence.jsonl") as running:
        yield running


def post(server: ReplayServer, body: dict) -> tuple[int, str, str]:
    """POST a chat completion; returns status, content type and the raw body."""
    url = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type"), response.read().decode()
    finally:
        connection.close()


def stream(server: ReplayServer, messages: list[dict], *, tools=TOOLS, include_usage=True) -> list:
    body = {"model": "recorded-model", "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    status, content_type, text = post(server, body)
    assert status == 200 and content_type == "text/event-stream"
    assert text.endswith("\n\n")
    payloads = [block.removeprefix("data: ") for block in text.split("\n\n") if block]
    assert all(block.startswith("data: ") for block in text.split("\n\n") if block)
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


def assemble(chunks: list) -> dict:
    """Fold the deltas the way an OpenAI client does."""
    assert chunks[-1] == "[DONE]"
    message = {"content": "", "reasoning": "", "calls": {}, "finish": None, "usage": None}
    for chunk in chunks[:-1]:
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == "recorded-model"
        if chunk.get("usage"):
            assert chunk["choices"] == []
            message["usage"] = chunk["usage"]
            continue
        choice = chunk["choices"][0]
        delta = choice["delta"]
        message["content"] += delta.get("content") or ""
        message["reasoning"] += delta.get("reasoning_content") or ""
        for call in delta.get("tool_calls") or []:
            entry = message["calls"].setdefault(call["index"], {"id": None, "name": None, "arguments": ""})
            entry["id"] = call.get("id") or entry["id"]
            entry["name"] = call.get("function", {}).get("name") or entry["name"]
            entry["arguments"] += call.get("function", {}).get("arguments", "")
        if choice["finish_reason"]:
            assert message["finish"] is None
            message["finish"] = choice["finish_reason"]
    return message


def first_answer_history() -> list[dict]:
    """What OpenCode sends after running turn 0's calls: the history plus their results."""
    return [
        SYSTEM,
        USER,
        {
            "role": "assistant",
            "content": "Let me look at the input, then write the answer down.",
            "tool_calls": [
                {"id": "call_cat", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                {"id": "call_read", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_cat", "content": "region,revenue\r\nWest,1177.85  \n"},
        {"role": "tool", "tool_call_id": "call_read", "content": "<path>/tmp/now/workdir/notes.txt</path>\n1: hi"},
    ]


def test_first_turn_streams_the_recorded_message(server):
    message = assemble(stream(server, [SYSTEM, USER]))
    assert message["content"] == "Let me look at the input, then write the answer down."
    assert message["reasoning"] == "The CSV is in input/."
    assert message["calls"] == {
        0: {
            "id": "call_cat",
            "name": "bash",
            "arguments": '{"command":"cat input/sales.csv","description":"Run cat input/sales.csv"}',
        },
        1: {"id": "call_read", "name": "read", "arguments": '{"filePath":"notes.txt"}'},
    }
    assert message["finish"] == "tool_calls"
    assert message["usage"] == {
        "prompt_tokens": 1500,
        "completion_tokens": 47,
        "total_tokens": 1547,
        "prompt_tokens_details": {"cached_tokens": 300},
        "completion_tokens_details": {"reasoning_tokens": 7},
    }


def test_text_streams_in_several_deltas_and_usage_only_on_request(server):
    chunks = stream(server, [SYSTEM, USER], include_usage=False)
    assert sum(1 for c in chunks[:-1] if c["choices"][0]["delta"].get("content")) > 1
    assert assemble(chunks)["usage"] is None
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_turn_follows_the_history_not_the_request_count(server):
    history = first_answer_history()
    for _ in range(3):  # OpenCode retrying or re-sending history must get the same answer
        message = assemble(stream(server, history))
        assert (message["content"], message["finish"], message["calls"]) == ("West.", "stop", {})
    assert assemble(stream(server, [SYSTEM, USER]))["calls"][0]["id"] == "call_cat"
    assert server.summary()["turns_served"] == 2


def test_side_requests_get_a_title_and_do_not_move_the_script(server):
    title = assemble(stream(server, [{"role": "system", "content": "You are a title generator."}, USER], tools=None))
    assert (title["content"], title["finish"]) == (TITLE_TEXT, "stop")
    assert assemble(stream(server, [SYSTEM, USER]))["calls"][0]["id"] == "call_cat"
    assert server.summary()["side_requests"] == 1


def test_results_equal_after_normalising_are_not_divergences(server):
    # call_cat differs only by CRLF and trailing blanks, call_read only by the workdir.
    stream(server, first_answer_history())
    assert server.divergences == []


def test_changed_result_is_reported_once(server, tmp_path):
    history = first_answer_history()
    history[3] = {"role": "tool", "tool_call_id": "call_cat", "content": "region,revenue\nWest,5.00\n"}
    stream(server, history)
    stream(server, history)  # re-sent history: no second report
    expected = {
        "kind": "result_changed",
        "turn": 0,
        "call_id": "call_cat",
        "tool": "bash",
        "recorded": "region,revenue\nWest,1177.85\n",
        "now": "region,revenue\nWest,5.00\n",
    }
    assert server.divergences == [expected]
    assert [json.loads(line) for line in (tmp_path / "divergence.jsonl").read_text().splitlines()] == [expected]


def test_request_past_the_recording_stops_the_run_and_is_reported(server):
    history = first_answer_history() + [{"role": "assistant", "content": "West."}, {"role": "user", "content": "more"}]
    message = assemble(stream(server, history))
    assert (message["content"], message["finish"], message["calls"]) == (END_OF_RECORDING_TEXT, "stop", {})
    assert server.divergences == [{"kind": "extra_request", "turn": 2, "recorded_turns": 2}]
    assert server.summary()["extra_requests"] == 1


def test_non_streaming_request_gets_one_completion(server):
    status, content_type, text = post(server, {"model": "m", "messages": [SYSTEM, USER], "tools": TOOLS})
    assert (status, content_type) == (200, "application/json")
    body = json.loads(text)
    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert [call["id"] for call in choice["message"]["tool_calls"]] == ["call_cat", "call_read"]
    assert choice["message"]["reasoning_content"] == "The CSV is in input/."
    assert body["usage"]["total_tokens"] == 1547


def test_models_endpoint_and_errors(server):
    url = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("GET", "/v1/models")
    assert json.loads(connection.getresponse().read())["data"][0]["id"] == "replay"
    connection.close()
    assert post(server, {"messages": "not a list"})[0] == 400
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("POST", "/v1/embeddings", "{}")
    assert connection.getresponse().status == 404
    connection.close()


def test_concurrent_requests_are_answered_consistently(server):
    results: list[str] = []

    def ask() -> None:
        results.append(assemble(stream(server, first_answer_history()))["content"])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["West."] * 8
    assert server.divergences == []


def test_server_listens_on_loopback_and_writes_nothing_to_stderr(server, capfd):
    assert server.base_url.startswith("http://127.0.0.1:")
    stream(server, [SYSTEM, USER])
    assert capfd.readouterr().err == ""


def test_replay_in_the_recordings_own_workdir_matches_too():
    # The environment replays where it recorded: the same directory on both sides, and a trace
    # that does not reveal its workdir (absolute paths only).
    b = TraceBuilder()
    b.step_start()
    b.bash("pwd", "/tmp/now/workdir\n", call_id="call_pwd")
    b.step_finish("tool-calls")
    script = ReplayScript.from_trace(b.dumps())
    assert script.workdir is None
    history = [SYSTEM, USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_pwd", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_pwd", "content": "/tmp/now/workdir\n"}]
    with ReplayServer(script) as server:
        stream(server, history)
        assert server.divergences == [{"kind": "extra_request", "turn": 1, "recorded_turns": 1}]
