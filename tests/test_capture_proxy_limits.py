"""What the agent's side can do to the host's capture proxy: a huge request body is refused before
it is held, and the proxy (which forwards with the endpoint's key) listens on loopback only.
openenv's real CaptureServer behind our middleware, and the replay model as the endpoint."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess

import pytest

from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import ReplayServer
from smoldata_tui.training.capture import ModelCapture
from smoldata_tui.training.capture_policy import MAX_REQUEST_BYTES, ThinkingOff

from .conftest import SAMPLES


def through_middleware(chunks: list[bytes]) -> tuple[list[dict], list[dict]]:
    """(what the app behind ThinkingOff received, what went back to the client)."""
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def main():
        pending = [{"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1} for i, chunk in enumerate(chunks)]

        async def receive():
            return pending.pop(0)

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}
        await ThinkingOff(app)(scope, receive, send)

    asyncio.run(main())
    return reached, sent


def test_a_request_body_past_the_cap_is_refused_without_being_held():
    piece = b"x" * (1 << 20)
    reached, sent = through_middleware([b'{"messages": ["'] + [piece] * ((MAX_REQUEST_BYTES >> 20) + 1) + [b'"]}'])
    assert reached == [] and sent[0]["status"] == 413
    assert b"request body over 32 MiB" in sent[1]["body"]


def test_a_request_within_the_cap_reaches_the_model_with_thinking_off():
    reached, sent = through_middleware([b'{"model": "m", ', b'"messages": []}'])
    assert json.loads(reached[0]["body"])["chat_template_kwargs"] == {"enable_thinking": False}
    assert sent[0]["status"] == 200


def other_addresses() -> list[str]:
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    return [address for address in found if ":" not in address and not address.startswith("127.")]


def test_the_host_capture_proxy_listens_on_loopback_only(tmp_path):
    addresses = other_addresses()
    if not addresses:
        pytest.skip("this machine has no address besides loopback to try")
    model = ReplayServer(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), model="m").start()
    capture = ModelCapture(llm_url=model.base_url, model="m", api_key="k" * 12, requests_path=tmp_path / "run.requests.jsonl")
    try:
        capture.start(lambda message: None)
        with socket.create_connection(("127.0.0.1", capture.port), timeout=5):
            pass  # the sandbox's way in works
        for address in addresses:
            with pytest.raises(OSError):
                socket.create_connection((address, capture.port), timeout=5).close()
    finally:
        capture.stop()
        model.close()


def test_a_key_in_the_endpoints_query_string_is_never_said(tmp_path):
    """`--base-url http://host/v1?api_key=…`: the stage line quoting the URL masks the query's values
    (it masked only a user:password)."""
    model = ReplayServer(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), model="m").start()
    capture = ModelCapture(llm_url=model.base_url + "?api_key=qs-secret-5a1c9e", model="m", api_key="k" * 12,
                           requests_path=tmp_path / "run.requests.jsonl")  # fmt: skip
    said: list[str] = []
    try:
        try:
            capture.start(said.append)
        except Exception:  # noqa: BLE001 - whether the endpoint takes the query is not the point
            pass
    finally:
        capture.stop()
        model.close()
    assert any(message.startswith("probing http://127.0.0.1:") and "api_key=***" in message for message in said), said
    assert not any("qs-secret-5a1c9e" in message for message in said) and "qs-secret" not in repr(capture)
