"""The agent's model traffic through openenv's capture proxy, in the environment's training policy.

Training puts openenv's ``CaptureServer`` (``openenv.core.harness.capture``) between OpenCode and
the model; so does a live episode here. :class:`ModelCapture`:

1. probes the endpoint with openenv's ``validate_llm`` (no tool probe: its tool-bearing request
   would reach the model outside the policy below) and settles the capture level: ``tokens`` on a
   vLLM-style endpoint returning token ids and logprobs (trainable), ``logprobs``/``text``
   otherwise ("not trainable: the endpoint returns no token ids");
2. starts ``CaptureServer`` on a free port with ``max_output_tokens`` 4096 (the environment's
   ``proxy_max_tokens_cap``), the model name as given (openenv rewrites every request's ``model``
   to it), the real endpoint key (it stays on the host) and a random admin key (the server binds
   every interface; without that key nobody can mint a session on it);
3. forces ``chat_template_kwargs.enable_thinking`` false on every chat request before openenv sees
   it (the environment's ``proxy_disable_thinking``; openenv 0.10 does it only for Qwen3.5 names);
4. mints one session: its id is the API key OpenCode uses, so the endpoint key never enters the
   sandbox;
5. writes a summary of every request it sends the model to ``run.requests.jsonl`` (:mod:`requests`);
6. at the end, exports the session as openenv's ``TrainingTrace`` (``to_training_trace``).

Importing ``openenv.core.harness`` takes seconds (it loads openenv's web UI): :func:`prefetch`
starts that import on a thread while the sandbox is made, and everything else waits for it only
when it needs it.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# TRAINING_OUTPUT_CAP lives in requests so that the findings can import it without urllib and sockets.
from smoldata_tui.training.requests import TRAINING_OUTPUT_CAP, RequestLog

NOT_TRAINABLE = "not trainable: the endpoint returns no token ids"
_MODULES = (
    "openenv.core.harness.capture.runner",
    "openenv.core.harness.capture.validate_llm",
    "openenv.core.harness.capture.export",
    "openenv.core.harness.capture.contract",
)
_prefetched: threading.Thread | None = None
_prefetch_lock = threading.Lock()


class CaptureFailed(RuntimeError):
    """The capture proxy cannot serve this endpoint; the message says why, in one line."""


def prefetch() -> None:
    """Start importing openenv's capture layer in the background (idempotent)."""
    global _prefetched
    with _prefetch_lock:
        if _prefetched is None:
            _prefetched = threading.Thread(target=_import_capture, name="openenv-import", daemon=True)
            _prefetched.start()


def _import_capture() -> None:
    import importlib

    for name in _MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the real import below reports it
            return


def _capture_modules():
    import importlib

    prefetch()
    _prefetched.join()
    # By module path: the package re-exports functions under the same names as these modules.
    return tuple(importlib.import_module(name) for name in _MODULES)


@dataclass
class CaptureRecord:
    """What ``run.meta.json`` says about the capture (``capture``); no credentials."""

    enabled: bool = True
    level: str = ""
    trainable: bool = False
    max_output_tokens: int = TRAINING_OUTPUT_CAP
    thinking: str = "disabled"
    logprobs_mode: str = ""
    param_fixes: list[str] = field(default_factory=list)
    probe_findings: list[str] = field(default_factory=list)
    validation: list[str] = field(default_factory=list)
    requests: str | None = None  # the requests file's name, beside the trace
    training_trace: str | None = None  # run.training.json, when there is one
    training_turns: int | None = None
    not_trainable_because: str | None = None
    port: int | None = None  # where it listened on the host, while the episode ran

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return probe.getsockname()[1]


class _ThinkingOff:
    """ASGI middleware: every chat request leaves with ``enable_thinking`` false."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not scope.get("path", "").endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks, more = [], True
        while more:
            message = await receive()
            if message.get("type") != "http.request":
                await self.app(scope, _once(message, receive), send)
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            kwargs = data.get("chat_template_kwargs")
            data["chat_template_kwargs"] = {**(kwargs if isinstance(kwargs, dict) else {}), "enable_thinking": False}
            body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await self.app({**scope, "headers": headers}, _once({"type": "http.request", "body": body, "more_body": False}, receive), send)


def _once(first: dict, receive):
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return first
        return await receive()

    return replay


class ModelCapture:
    """One episode's capture proxy. ``start`` → :attr:`base_url` / :attr:`session_id` for
    OpenCode → ``training_trace`` → ``stop`` (safe to call on every path, more than once)."""

    def __init__(self, *, llm_url: str, model: str, api_key: str, requests_path: Path,
                 sandbox_host: str = "127.0.0.1", max_output_tokens: int = TRAINING_OUTPUT_CAP) -> None:  # fmt: skip
        self.llm_url = llm_url
        self.model = model
        self._api_key = api_key
        self.sandbox_host = sandbox_host
        self.record = CaptureRecord(max_output_tokens=max_output_tokens, requests=requests_path.name)
        self.requests = RequestLog(requests_path)
        self._server = None
        self._admin_key = secrets.token_urlsafe(24)
        self.session_id: str | None = None
        self.port: int | None = None

    def __repr__(self) -> str:  # never the keys
        return f"ModelCapture({self.llm_url!r}, {self.model!r}, level={self.record.level!r})"

    @property
    def base_url(self) -> str:
        """Where OpenCode in the sandbox sends its requests."""
        return f"http://{self.sandbox_host}:{self.port}/v1"

    def start(self, say: Callable[[str], None]) -> None:
        say("loading openenv's capture layer")
        runner, validate_llm, _export, _contract = _capture_modules()
        say(f"probing {self.llm_url} for token ids and logprobs")
        report = validate_llm.validate_llm(self.llm_url, self.model, api_key=self._api_key or None, timeout=60.0,
                                           check_tools=False)  # fmt: skip
        self.record.param_fixes = list(report.param_fixes)
        self.record.probe_findings = list(report.findings)
        self.record.logprobs_mode = report.logprobs_mode
        if not report.reachable:
            raise CaptureFailed(" ".join(report.summary().split()))
        self.record.level = report.capture_level or "text"
        self.record.trainable = self.record.level == "tokens"
        if not self.record.trainable:
            self.record.not_trainable_because = NOT_TRAINABLE
        for attempt in range(3):
            port = _free_port()
            server = runner.CaptureServer(llm_url=self.llm_url, model=self.model, port=port,
                                          max_output_tokens=self.record.max_output_tokens, api_key=self._api_key or None,
                                          capture_level=self.record.level, admin_key=self._admin_key)  # fmt: skip
            server.app.add_middleware(_ThinkingOff)
            self._log_forwarded(server.app.state.inference)
            try:
                server.start(timeout_s=60.0)
            except RuntimeError:
                server.stop()
                if attempt == 2:
                    raise
                continue
            self._server, self.port = server, port
            self.record.port = port
            break
        self.session_id = self._mint_session()
        level = self.record.level
        say(f"capture level {level}: " + ("trainable (token ids and logprobs)" if self.record.trainable else self.record.not_trainable_because))
        say(f"capture proxy on port {self.port}: max_tokens ≤ {self.record.max_output_tokens}, thinking disabled, model {self.model}")

    def _log_forwarded(self, client) -> None:
        """Summarise each body as openenv posts it upstream: after its output cap, the thinking
        switch, its capture params and any parameter fixes, i.e. what reached the model. (openenv
        0.10's ``InferenceClient._post_with_retries`` is the one place every such body passes.)"""
        post = client._post_with_retries

        async def logged(path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
            if path.endswith("/chat/completions"):
                self.requests.add(body)
            return await post(path, body, **kwargs)

        client._post_with_retries = logged

    def _mint_session(self) -> str:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/sessions",
            data=json.dumps({"metadata": {"app": "smoldata-tui"}}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._admin_key}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["session_id"]

    def training_trace(self):
        """openenv's ``TrainingTrace`` of the session, or None with the reason in the record."""
        if self._server is None or self.session_id is None:
            return None
        _runner, _validate, export, contract = _capture_modules()
        session = self._server.registry.get(self.session_id)
        if session is None:
            return None
        document = export.export_session(session, include_messages=True, capture_level=self.record.level)
        self.record.validation = [str(item) for item in document.get("validation", [])]
        if not self.record.trainable:
            return None
        try:
            trace = contract.to_training_trace(session.graph, document)
        except ValueError as exc:
            self.record.not_trainable_because = f"not trainable: {exc}"
            return None
        self.record.training_turns = len(trace.turns)
        return trace

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()
