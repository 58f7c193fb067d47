"""The fork endpoint: the recording answers the turns before step N, another model from N on.

A :class:`ForkServer` is the replay model (:class:`ReplayServer`) over the parent's turns before
the fork step. A request whose position in the conversation is at or past the fork step (the
same rule that picks a replayed turn) is relayed, as it came, to the model the fork continues
with: its URL, its key, its model name. OpenCode's side requests (the session title, no
``tools``) are answered here and never reach that model, so it sees requests from step N on only.

An edit made before forking is injected into every relayed request: the recording's tool output
(the last call of step N-1, by call id) or, at step 1, the user prompt. OpenCode still ran the
tool and records its real output in the fork's trace; what the model reads is the edit. The
results OpenCode sends are compared with the recording before the edit is applied, so
divergences before N are reported as any replay reports them.

Standard library only; the relayed answer is streamed through as it arrives.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import ReplayServer

__all__ = ["ForkEdit", "ForkServer"]

_RELAY_TIMEOUT_S = 600.0  # a model's turn; OpenCode's own provider timeout is the same
_RELAY_CHUNK = 64 << 10


@dataclass(frozen=True)
class ForkEdit:
    """What the model reads instead of the recording: ``call_id``'s tool output, or with
    ``call_id`` None the user prompt."""

    text: str
    call_id: str | None = None


class ForkServer(ReplayServer):
    """``script``: the parent's whole script; turns from step ``at_step`` on are not served but
    relayed to ``target`` (a ModelEndpoint, closed with this server)."""

    def __init__(self, script: ReplayScript, at_step: int, target, *, edit: ForkEdit | None = None, **options: Any) -> None:
        before = [turn for turn in script.turns if turn.step < at_step]
        super().__init__(ReplayScript(before, script.session_id, script.workdir, list(script.notes), script.steps),
                         model=target.model, **options)  # fmt: skip
        self.fork_turn = len(before)
        self.target = target
        self.edit = edit
        self.relayed = 0
        self.edits_injected = 0

    def relay(self, request: dict[str, Any], handler: BaseHTTPRequestHandler) -> bool:
        if not request.get("tools"):
            return False  # the session title: answered by the replay, never by the forked model
        messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
        self._compare_results(messages)  # what OpenCode sent, before any edit
        if self._turn_index(messages) < self.fork_turn:
            return False
        body = dict(request, model=self.target.model, messages=self._edited(request.get("messages") or []))
        with self._lock:
            self.relayed += 1
        _forward(self.target, body, handler)
        return True

    def _edited(self, messages: list) -> list:
        if self.edit is None:
            return messages
        edited, applied = [], False
        for message in messages:
            if isinstance(message, dict) and not applied and self._is_edited(message):
                message, applied = {**message, "content": self.edit.text}, True
            edited.append(message)
        if applied:
            with self._lock:
                self.edits_injected += 1
        return edited

    def _is_edited(self, message: dict) -> bool:
        if self.edit.call_id is None:
            return message.get("role") == "user"
        return message.get("role") == "tool" and message.get("tool_call_id") == self.edit.call_id

    def close(self) -> None:
        super().close()
        self.target.close()


def _forward(target, body: dict, handler: BaseHTTPRequestHandler) -> None:
    parts = urlsplit(target.base_url)
    path = (parts.path.rstrip("/") or "") + "/chat/completions"
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    handler.close_connection = True
    try:
        connection = connection_type(parts.hostname or "127.0.0.1", parts.port, timeout=_RELAY_TIMEOUT_S)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {target.api_key}"}
        connection.request("POST", path, body=data, headers=headers)
        answer = connection.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        # Never the key: the URL's host and the reason only (OpenCode shows this as a provider error).
        _send(handler, 502, b"application/json", json.dumps({"error": {
            "message": f"the fork's model at {parts.hostname}:{parts.port or ''} did not answer: {type(exc).__name__}",
            "type": "upstream_error", "code": 502}}).encode())  # fmt: skip
        return
    try:
        handler.send_response(answer.status)
        handler.send_header("Content-Type", answer.getheader("Content-Type", "application/json"))
        handler.send_header("Connection", "close")  # the end of the body is the end of the answer
        handler.end_headers()
        while chunk := answer.read1(_RELAY_CHUNK):
            handler.wfile.write(chunk)
            handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        pass  # OpenCode went away (killed)
    except (OSError, http.client.HTTPException):
        pass  # the model hung up mid-answer: OpenCode sees a cut stream, as from the model itself
    finally:
        connection.close()


def _send(handler: BaseHTTPRequestHandler, status: int, kind: bytes, data: bytes) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", kind.decode())
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
