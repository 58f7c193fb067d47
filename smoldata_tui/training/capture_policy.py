"""Training's capture policy around openenv's ``CaptureServer``, in one self-contained file.

This file runs in two places and is the same code in both:

* on the host, imported by :mod:`capture` (a local episode's proxy runs in smoldata-tui's process);
* inside a remote sandbox, uploaded as is and run as ``python3 capture_policy.py <folder>``
  (:mod:`sandbox_capture`): a Daytona sandbox cannot reach the user's host, so there the proxy
  runs beside OpenCode, as opencode_env runs its own.

So it imports nothing from smoldata_tui and only the standard library at module level; openenv is
imported inside functions. The policy: the probe settles the capture level (``tokens`` only when
the endpoint returns token ids and logprobs), every request's output is capped at 4096 tokens
(``proxy_max_tokens_cap``), thinking is disabled (``proxy_disable_thinking``), the model name is
the one given, and every body sent upstream is summarised (never its messages).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

TRAINING_OUTPUT_CAP = 4096  # the environment's OpenCodeConfig.proxy_max_tokens_cap
MAX_REQUEST_BYTES = 32 << 20  # a chat request the proxy accepts (a 128k-token context is a few MB of JSON)
NOT_TRAINABLE = "not trainable: the endpoint returns no token ids"
# openenv's SAMPLING_KEYS after the temperature: summarised when a request carries them
SAMPLING_KNOBS = ("top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty")
MODULES = (
    "openenv.core.harness.capture.runner",
    "openenv.core.harness.capture.validate_llm",
    "openenv.core.harness.capture.export",
    "openenv.core.harness.capture.contract",
)


class CaptureFailed(RuntimeError):
    """The capture proxy cannot serve this endpoint; the message says why, in one line."""


_IMPORT_LOCK = threading.Lock()
_HEAVY_PARENTS = ("openenv.core", "openenv.core.harness")


def import_openenv(name: str):
    """The module ``name`` under ``openenv.core.harness``, exactly as openenv ships it, without
    running the ``__init__`` of ``openenv.core`` and ``openenv.core.harness``: they import openenv's
    web UI (gradio) and its rollout helpers, about 10 s of CPU that the capture layer and
    ``TrainingTrace`` never use (under 1 s this way). For the import, the two packages are bare
    package objects over their real folders; then they are dropped again, so a later
    ``import openenv.core`` runs them in full and finds these modules already loaded."""
    import importlib
    import importlib.util
    import types

    with _IMPORT_LOCK:
        if name in sys.modules or all(parent in sys.modules for parent in _HEAVY_PARENTS):
            return importlib.import_module(name)
        bare = []
        try:
            for parent in _HEAVY_PARENTS:
                if parent in sys.modules:
                    continue
                spec = importlib.util.find_spec(parent)  # its own parent (openenv) is light
                if spec is None or not spec.submodule_search_locations:
                    raise ModuleNotFoundError(f"No module named {parent!r}", name=parent)
                package = types.ModuleType(parent)
                package.__path__, package.__spec__, package.__package__ = list(spec.submodule_search_locations), spec, parent
                sys.modules[parent] = package
                bare.append(parent)
            return importlib.import_module(name)
        finally:
            for parent in bare:
                sys.modules.pop(parent, None)


def capture_modules():
    # By module path: the package re-exports functions under the same names as these modules.
    return tuple(import_openenv(name) for name in MODULES)


# --- what a request asked of the model ------------------------------------------------------
def request_summary(request: dict[str, Any]) -> dict[str, Any]:
    """What a chat request asked of the model, without its messages (``run.requests.jsonl``)."""
    kwargs = request.get("chat_template_kwargs")
    tools = request.get("tools") if isinstance(request.get("tools"), list) else []
    return {
        "model": request.get("model"),
        "max_tokens": request.get("max_tokens"),
        "max_completion_tokens": request.get("max_completion_tokens"),
        "enable_thinking": kwargs.get("enable_thinking") if isinstance(kwargs, dict) else None,
        "logprobs": request.get("logprobs"),
        "return_token_ids": request.get("return_token_ids"),
        "top_logprobs": request.get("top_logprobs"),
        "temperature": request.get("temperature"),
        **{knob: request.get(knob) for knob in SAMPLING_KNOBS if knob in request},
        "stream": bool(request.get("stream")),
        "tools": [_tool_name(tool) for tool in tools],
        "messages": len(request.get("messages") or []),
    }


def _tool_name(tool: object) -> str | None:
    function = tool.get("function") if isinstance(tool, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if name is None and isinstance(tool, dict):
        name = tool.get("name")  # other dialects name the tool at the top level
    return name if isinstance(name, str) else None


# --- the probe ------------------------------------------------------------------------------
# The probe's whole time at most: what openenv's limits came to before a run's --timeout bounded
# it (30 s for the model list, then 60 s for the completion).
PROBE_CAP_S = 90.0
PROBE_FLOOR_S = 2.0  # with a run's time all but gone, still long enough to see an endpoint answer


def probe_budget(remaining_s: float | None) -> float:
    """How long the probe may take with ``remaining_s`` of the run's timeout left (None: no limit)."""
    return PROBE_CAP_S if remaining_s is None else max(PROBE_FLOOR_S, min(PROBE_CAP_S, remaining_s))


def request_timeout(budget_s: float) -> float:
    """``validate_llm``'s per-request timeout for a probe of ``budget_s`` in all: it asks for the
    model list (capping that request at 30 s) and then for a completion, each waiting this long."""
    return max(budget_s / 2, budget_s - 30.0)


def probe(validate_llm, llm_url: str, model: str, api_key: str | None, budget_s: float = PROBE_CAP_S) -> dict[str, Any]:
    """The capture level and what the probe found, as ``run.meta.json``'s ``capture`` fields.

    No tool probe: its tool-bearing request would reach the model outside the policy."""
    timeout, started = request_timeout(budget_s), time.monotonic()
    report = validate_llm.validate_llm(llm_url, model, api_key=api_key or None, timeout=timeout, check_tools=False)
    if not report.reachable:
        raise CaptureFailed(unreachable_reason(report, time.monotonic() - started, timeout))
    level = report.capture_level or "text"
    return {
        "level": level,
        "trainable": level == "tokens",
        "logprobs_mode": report.logprobs_mode,
        "param_fixes": list(report.param_fixes),
        "probe_findings": list(report.findings),
        "not_trainable_because": None if level == "tokens" else NOT_TRAINABLE,
    }


def unreachable_reason(report, elapsed: float, timeout: float) -> str:
    """Why the probe got no answer, in one line. urllib wraps a failed connect (refused, timed out)
    in URLError; a bare TimeoutError is a read that timed out: the connection was accepted."""
    if any(str(item).startswith("probe failed: TimeoutError") for item in report.findings):
        return (f"the endpoint accepted the connection but did not answer within {elapsed:.0f} s "
                f"(a one-word chat completion waited {timeout:.0f} s of it)")
    return " ".join(report.summary().split())


def no_answer(budget_s: float) -> str:
    """Why the probe was abandoned when it outlasted its budget (an endpoint answering byte by byte)."""
    return f"the endpoint did not finish answering the probe within {budget_s:.0f} s"


# --- the server -----------------------------------------------------------------------------
class ThinkingOff:
    """ASGI middleware: every chat request leaves with ``enable_thinking`` false (openenv 0.10
    does it by itself only for Qwen3.5 model names)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not scope.get("path", "").endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        chunks, more, size = [], True, 0
        while more:
            message = await receive()
            if message.get("type") != "http.request":
                await self.app(scope, _once(message, receive), send)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > MAX_REQUEST_BYTES:  # the agent's side sends this: it is never held whole
                await _refuse(send, 413, f"request body over {MAX_REQUEST_BYTES >> 20} MiB")
                return
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


async def _refuse(send, status: int, reason: str) -> None:
    body = json.dumps({"error": {"message": reason, "type": "invalid_request_error"}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _once(first: dict, receive):
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return first
        return await receive()

    return replay


def _log_forwarded(client, on_request: Callable[[dict[str, Any]], None]) -> None:
    """Call ``on_request`` with each body as openenv posts it upstream: after its output cap, the
    thinking switch, its capture params and any parameter fixes, i.e. what reached the model.
    (openenv 0.10's ``InferenceClient._post_with_retries`` is the one place every such body passes.)"""
    post = client._post_with_retries

    async def logged(path: str, body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if path.endswith("/chat/completions"):
            on_request(body)
        return await post(path, body, **kwargs)

    client._post_with_retries = logged


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe_socket:
        probe_socket.bind((host, 0))
        return probe_socket.getsockname()[1]


def serve(runner, *, llm_url: str, model: str, api_key: str | None, level: str, admin_key: str,
          on_request: Callable[[dict[str, Any]], None], max_output_tokens: int = TRAINING_OUTPUT_CAP,
          host: str = "0.0.0.0"):  # fmt: skip
    """A started ``CaptureServer`` in the policy, and its port. ``host`` other than openenv's
    ``0.0.0.0`` binds that address only (the sandbox's proxy listens on its loopback)."""
    for attempt in range(3):
        port = _free_port(host)
        server = runner.CaptureServer(llm_url=llm_url, model=model, port=port, max_output_tokens=max_output_tokens,
                                      api_key=api_key or None, capture_level=level, admin_key=admin_key)  # fmt: skip
        server.app.add_middleware(ThinkingOff)
        _log_forwarded(server.app.state.inference, on_request)
        try:
            if host == "0.0.0.0":
                server.start(timeout_s=60.0)
            else:
                _start_on(runner, server, host, timeout_s=60.0)
        except RuntimeError:
            server.stop()
            if attempt == 2:
                raise
            continue
        return server, port
    raise AssertionError("unreachable")


def _start_on(runner, server, host: str, timeout_s: float) -> None:
    """``CaptureServer.start`` on ``host`` instead of every interface (openenv 0.10 hard-codes
    ``0.0.0.0``), with its identity check: /health must report this server's instance id."""
    import uvicorn

    config = uvicorn.Config(server.app, host=host, port=server.port, log_level="warning")
    server._server = uvicorn.Server(config)
    server._thread = threading.Thread(target=server._server.run, daemon=True)
    server._thread.start()
    want = server.app.state.instance_id
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not server._thread.is_alive():
            raise RuntimeError(f"capture server thread exited while starting on {host}:{server.port}")
        got = runner._health_instance(server.port)
        if got == want:
            return
        if got is not None:
            raise RuntimeError(f"port {server.port} is served by another capture server")
        time.sleep(0.1)
    raise RuntimeError(f"capture server did not come up on {host}:{server.port} within {timeout_s:.0f}s")


def require_token_capture(level: str, sampling: dict[str, Any] | None) -> None:
    """openenv refuses every request of a session with a training policy unless the endpoint
    returns token ids: say so once, before the agent starts."""
    if sampling and level != "tokens":
        raise CaptureFailed(f"--sampling needs an endpoint that returns token ids (capture level {level}): "
                            "openenv applies training's sampling policy only to a trainable capture")


def mint_session(port: int, admin_key: str, sampling: dict[str, Any] | None = None) -> str:
    """One capture session: its id is the API key OpenCode uses. ``sampling``: training's policy
    (``training_sampling``'s result), set on the session as a trainer's capture session sets it;
    openenv then sends it with every request and records it on every turn."""
    import urllib.request  # here: ``check`` imports this module and never makes a request

    payload: dict[str, Any] = {"metadata": {"app": "smoldata-tui"}}
    if sampling:
        payload["sampling"] = sampling
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/sessions",
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {admin_key}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["session_id"]


def export_trace(export, contract, server, session_id: str, level: str) -> tuple[Any, dict[str, Any]]:
    """(openenv's ``TrainingTrace`` of the session or None, the record fields it settles)."""
    session = server.registry.get(session_id)
    if session is None:
        return None, {}
    document = export.export_session(session, include_messages=True, capture_level=level)
    found: dict[str, Any] = {"validation": [str(item) for item in document.get("validation", [])]}
    if level != "tokens":
        return None, found
    try:
        trace = contract.to_training_trace(session.graph, document)
    except ValueError as exc:
        found["not_trainable_because"] = f"not trainable: {exc}"
        return None, found
    found["training_turns"] = len(trace.turns)
    return trace, found


# --- inside a sandbox -----------------------------------------------------------------------
# The folder's files. The host writes config.json and, to end the capture, stop; this writes the
# rest. ready.json or failed.json says how the start went; done.json comes last.
CONFIG, READY, FAILED, REQUESTS, STOP, TRAINING, DONE, LOG = (
    "config.json", "ready.json", "failed.json", "requests.jsonl", "stop", "training.json", "done.json", "runner.log")  # fmt: skip


def _write(folder: str, name: str, text: str) -> None:
    temporary = os.path.join(folder, f".{name}.tmp")
    with open(temporary, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, os.path.join(folder, name))


def run_in_sandbox(folder: str) -> int:
    """Read and delete config.json, probe, serve on 127.0.0.1, write ready.json; when ``stop``
    appears, export the session (training.json, done.json) and stop."""
    path = os.path.join(folder, CONFIG)
    with open(path, encoding="utf-8") as stream:
        config = json.load(stream)
    os.remove(path)  # the endpoint key: not left in a file
    lock = threading.Lock()

    def on_request(body: dict[str, Any]) -> None:
        line = json.dumps(request_summary(body), ensure_ascii=False, default=str) + "\n"
        with lock, open(os.path.join(folder, REQUESTS), "a", encoding="utf-8") as stream:
            stream.write(line)

    try:
        runner, validate_llm, export, contract = capture_modules()
        record = probe(validate_llm, config["llm_url"], config["model"], config.get("api_key"),
                       float(config.get("probe_budget_s") or PROBE_CAP_S))  # fmt: skip
        require_token_capture(record["level"], config.get("sampling"))
        import secrets

        admin_key = secrets.token_urlsafe(24)
        server, port = serve(runner, llm_url=config["llm_url"], model=config["model"], api_key=config.get("api_key"),
                             level=record["level"], admin_key=admin_key, on_request=on_request,
                             max_output_tokens=int(config["max_output_tokens"]), host="127.0.0.1")  # fmt: skip
        session_id = mint_session(port, admin_key, config.get("sampling"))
    except Exception as exc:  # noqa: BLE001 - the host reads the reason
        _write(folder, FAILED, json.dumps({"reason": f"{type(exc).__name__}: {exc}" if not isinstance(exc, CaptureFailed) else str(exc)}))
        return 1
    _write(folder, READY, json.dumps({**record, "port": port, "session_id": session_id}))
    while not os.path.exists(os.path.join(folder, STOP)):
        time.sleep(0.2)
    try:
        trace, found = export_trace(export, contract, server, session_id, record["level"])
        if trace is not None:
            _write(folder, TRAINING, trace.model_dump_json())
    except Exception as exc:  # noqa: BLE001 - the host reads the reason
        found = {"not_trainable_because": f"training trace not exported: {type(exc).__name__}: {exc}"}
    _write(folder, DONE, json.dumps(found))
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run_in_sandbox(sys.argv[1]))
