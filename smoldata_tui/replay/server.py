"""The replay model: a local OpenAI-compatible endpoint that answers with a recorded episode.

``--model replay:PATH`` points OpenCode at this server instead of a real model. Each chat
completion request gets the recorded assistant turn at its position: the same text, tool
names, arguments and call ids, streamed as ``chat.completion.chunk`` server-sent events with
the recorded finish reason and token usage. OpenCode then runs the calls for real, so the
episode re-executes against today's environment and grader.

Which turn: the position of the request in the conversation, not the number of requests
seen. OpenCode re-sends the whole history every time, so the answer is the turn after the
recorded one whose call ids appear in the latest assistant message, or else the number of
assistant messages in the request. Requests without ``tools`` are OpenCode's side calls
(session title) and get a fixed title without moving the script.

Every tool result OpenCode sends back is compared with the recorded one, once per call id;
differences and requests past the recording's end go to a :class:`DivergenceLog`. A request
past the end is answered with a plain final message and ``finish_reason: "stop"``, so the run
ends instead of looping.

Token ids: a non-streamed request that asks for ``return_token_ids`` / ``logprobs`` (as
training's capture proxy does) is answered in vLLM's token-id dialect (:mod:`token_dialect`);
``answer_level`` "logprobs" or "text" plays an endpoint that returns less, so the capture level
openenv's probe settles can be tested too.

Request bodies and headers (the prompt, the API key) are never logged to a stream. With
``record_requests`` each request's parameters (model, output cap, thinking switch, token-id
request, tool names: :func:`request_summary`, never the messages or headers) are kept in
:attr:`ReplayServer.requests`, so a test can assert what reached the model. Loopback by default.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from smoldata_tui.replay.divergence import DivergenceLog, normalise_result
from smoldata_tui.replay.script import ReplayScript, ReplayTurn
from smoldata_tui.replay.token_dialect import LEVELS, add_token_fields
from smoldata_tui.training.requests import request_summary

__all__ = ["END_OF_RECORDING_TEXT", "ReplayServer", "TITLE_TEXT", "request_summary"]

TITLE_TEXT = "Replayed episode"
END_OF_RECORDING_TEXT = "The recorded episode has no more steps; the replay ends here."
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_MODELS_PATHS = ("/v1/models", "/models")
_DELTA_CHARS = 32  # stream text in pieces of this size, as a model would
_MAX_BODY = 64 << 20
# OpenCode's system prompt names the directory the agent works in.
_WORKING_DIRECTORY = re.compile(r"^\s*Working directory: (.+?)\s*$", re.MULTILINE)
_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


class ReplayServer:
    """Serve ``script`` on ``http://host:port/v1`` from a background thread.

    ``divergence_path``: also append divergences there as JSON Lines.
    ``recorded_workdir``: the recording's working directory, for comparing results that
    mention it (default: what the script learned from the trace).
    ``turn_delay_s``: wait this long before each recorded answer (demos).
    ``answer_level``: what non-streamed answers carry when asked: ``tokens`` (ids and logprobs,
    vLLM), ``logprobs`` (no ids) or ``text``.
    ``record_requests``: keep every chat request's :func:`request_summary` in :attr:`requests`.
    """

    def __init__(
        self,
        script: ReplayScript,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        divergence_path: str | os.PathLike[str] | None = None,
        recorded_workdir: str | None = None,
        model: str = "replay",
        turn_delay_s: float = 0.0,
        answer_level: str = "tokens",
        record_requests: bool = False,
    ) -> None:
        if answer_level not in LEVELS:
            raise ValueError(f"answer_level must be one of {', '.join(LEVELS)}")
        self.script = script
        self.answer_level = answer_level
        self.record_requests = record_requests
        self.requests: list[dict[str, Any]] = []
        self.model = model
        self.turn_delay_s = turn_delay_s
        self.recorded_workdir = recorded_workdir if recorded_workdir is not None else script.workdir
        self.divergence_log = DivergenceLog(divergence_path)
        # A call id names its first turn (ReplayScript makes them unique; a hand-built script may
        # repeat one, to play a model that does).
        self._recorded_calls: dict[str, tuple[ReplayTurn, object]] = {}
        for turn in script.turns:
            for call in turn.calls:
                self._recorded_calls.setdefault(call.call_id, (turn, call))
        self._lock = threading.Lock()
        self._served: set[int] = set()
        self._side_requests = 0
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.replay = self
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ReplayServer:
        if self._thread is None:
            # close() waits for serve_forever to notice, which it checks once per poll interval.
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="replay-model", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self.divergence_log.close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ results

    @property
    def divergences(self) -> list[dict[str, Any]]:
        return self.divergence_log.records

    def summary(self) -> dict[str, Any]:
        with self._lock:
            served, side = len(self._served), self._side_requests
        records = self.divergences
        return {
            "recorded_turns": len(self.script.turns),
            "turns_served": served,
            "side_requests": side,
            "extra_requests": sum(record["kind"] == "extra_request" for record in records),
            "changed_results": sum(record["kind"] == "result_changed" for record in records),
        }

    # ------------------------------------------------------------------ answering

    def relay(self, request: dict[str, Any], handler: BaseHTTPRequestHandler) -> bool:
        """Whether the request was answered elsewhere (written to ``handler`` already); a fork
        (replay/fork.py) sends the turns past its recording to another model."""
        return False

    def answer(self, request: dict[str, Any]) -> ReplayTurn:
        """The turn to send back for one chat completion request (and its bookkeeping)."""
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        if not request.get("tools"):
            with self._lock:
                self._side_requests += 1
            return _plain_turn(TITLE_TEXT, usage=_NO_USAGE)
        self._compare_results(messages)
        index = self._turn_index(messages)
        if index >= len(self.script.turns):
            self.divergence_log.extra_request(turn=index, recorded_turns=len(self.script.turns))
            return _plain_turn(END_OF_RECORDING_TEXT, usage=_NO_USAGE)
        with self._lock:
            self._served.add(index)
        if self.turn_delay_s > 0:
            time.sleep(self.turn_delay_s)
        return self.script.turns[index]

    def _turn_index(self, messages: list[dict]) -> int:
        assistants = [m for m in messages if m.get("role") == "assistant"]
        # The latest recorded call ids in the history name the turn exactly, even if OpenCode
        # left an empty assistant message out; the plain count is the fallback, and wins when a
        # repeated call id would point back to an earlier turn.
        for later, message in enumerate(reversed(assistants)):
            for call in message.get("tool_calls") or []:
                recorded = self._recorded_calls.get(call.get("id")) if isinstance(call, dict) else None
                if recorded is not None:
                    return max(recorded[0].index + 1 + later, len(assistants))
        return len(assistants)

    def _compare_results(self, messages: list[dict]) -> None:
        system_prompt = "\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
        # Both directories on both sides: they may also be the same path (a replay in the
        # environment itself), and then neither side may keep it.
        workdirs = _WORKING_DIRECTORY.findall(system_prompt) + [self.recorded_workdir or ""]
        for message in messages:
            call_id = message.get("tool_call_id")
            if message.get("role") != "tool" or not isinstance(call_id, str):
                continue
            found = self._recorded_calls.get(call_id)
            if found is None or found[1].output is None or not self.divergence_log.first_check(call_id):
                continue
            turn, call = found
            now = _text_of(message.get("content"))
            if normalise_result(now, workdirs) != normalise_result(call.output, workdirs):
                self.divergence_log.result_changed(
                    turn=turn.index, call_id=call_id, tool=call.name, recorded=call.output, now=now
                )


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a client holding a connection open must not block shutdown
    replay: ReplayServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (OpenCode killed mid-request) is routine, not worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self._path() in _MODELS_PATHS:
            model = {"id": self.server.replay.model, "object": "model", "created": 0, "owned_by": "smoldata-tui"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"no such endpoint: GET {self._path()}")

    def do_POST(self) -> None:  # noqa: N802
        if self._path() not in _CHAT_PATHS:
            self._send_error(404, f"no such endpoint: POST {self._path()}")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send_error(411, "a Content-Length header is required")
            return
        if not 0 <= length <= _MAX_BODY:
            self._send_error(413, "request body too large")
            return
        try:
            request = json.loads(self.rfile.read(length))
        except ValueError:
            request = None
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            self._send_error(400, "expected a JSON object with a messages list")
            return
        replay = self.server.replay
        if replay.record_requests:
            with replay._lock:
                replay.requests.append(request_summary(request))
        if replay.relay(request, self):
            return
        turn = replay.answer(request)
        model = request.get("model") if isinstance(request.get("model"), str) else replay.model
        try:
            if request.get("stream"):
                include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
                self._send_stream(_stream_chunks(turn, model, include_usage))
            else:
                self._send_json(200, add_token_fields(_completion(turn, model), request, replay.answer_level))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # OpenCode went away (killed); nothing to tell it

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        # Never log: request lines are harmless, but this is the one place where a future
        # change could start printing headers (Authorization) or bodies (the prompt).
        return

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def _send_json(self, status: int, body: dict) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str) -> None:
        # The request's body may be unread: close rather than parse it as the next request.
        self.close_connection = True
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

    def _send_stream(self, chunks: Iterator[dict | str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the end of the body is the end of the stream
        self.end_headers()
        self.close_connection = True
        for chunk in chunks:
            payload = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False)
            self.wfile.write(f"data: {payload}\n\n".encode())
            self.wfile.flush()


# ---------------------------------------------------------------------- wire format


def _stream_chunks(turn: ReplayTurn, model: str, include_usage: bool) -> Iterator[dict | str]:
    envelope = {
        "id": _completion_id(turn),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(turn.reasoning):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(turn.text):
        yield chunk({"content": piece})
    for position, call in enumerate(turn.calls):
        function = {"name": call.name, "arguments": ""}
        yield chunk({"tool_calls": [{"index": position, "id": call.call_id, "type": "function", "function": function}]})
        for piece in _argument_pieces(call.arguments):
            yield chunk({"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
    yield chunk({}, turn.finish_reason)
    if include_usage and turn.usage is not None:
        yield {**envelope, "choices": [], "usage": turn.usage}
    yield "[DONE]"


def _completion(turn: ReplayTurn, model: str) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [
            {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in turn.calls
        ]
    body = {
        "id": _completion_id(turn),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": turn.finish_reason}],
    }
    if turn.usage is not None:
        body["usage"] = turn.usage
    return body


def _completion_id(turn: ReplayTurn) -> str:
    return f"chatcmpl-replay-{turn.index}" if turn.index >= 0 else "chatcmpl-replay-unscripted"


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), _DELTA_CHARS):
        yield text[start : start + _DELTA_CHARS]


def _argument_pieces(arguments: str) -> Iterator[str]:
    # The AI SDK closes a tool call as soon as its arguments parse as JSON. No proper prefix of
    # a JSON object parses, so an object can be streamed in pieces; anything else (the raw
    # arguments of a recorded invalid call) goes in one piece, or a prefix might parse early.
    try:
        is_object = isinstance(json.loads(arguments), dict)
    except ValueError:
        is_object = False
    if is_object:
        yield from _pieces(arguments)
    elif arguments:
        yield arguments


def _plain_turn(text: str, *, usage: dict) -> ReplayTurn:
    return ReplayTurn(index=-1, text=text, reasoning="", calls=(), finish_reason="stop", usage=usage)


def _text_of(content: object) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (part.get("text") for part in content if isinstance(part, dict))
        return "".join(text for text in texts if isinstance(text, str))
    return ""
