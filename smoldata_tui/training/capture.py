"""The agent's model traffic through openenv's capture proxy, in the environment's training policy.

Training puts openenv's ``CaptureServer`` (``openenv.core.harness.capture``) between OpenCode and
the model; so does a live episode here. :class:`ModelCapture`:

1. probes the endpoint with openenv's ``validate_llm`` (no tool probe: its tool-bearing request
   would reach the model outside the policy below) and settles the capture level: ``tokens`` on a
   vLLM-style endpoint returning token ids and logprobs (trainable), ``logprobs``/``text``
   otherwise ("not trainable: the endpoint returns no token ids"). The probe takes at most what is
   left of the run's ``--timeout`` (and 90 s), on a thread of its own: a stop ends the wait at once;
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

The policy itself is :mod:`capture_policy` (the same file runs inside a Daytona sandbox, see
:mod:`sandbox_capture`). openenv's capture modules are imported without the ``openenv.core``
package's web UI (:func:`capture_policy.import_openenv`), still about a second: :func:`prefetch`
starts that import on a thread while the sandbox is made, and everything else waits for it only
when it needs it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldata_tui.masking import masked_url
from smoldata_tui.tasks.cancellable import Cancelled, TimedOut, call_unless_cancelled
from smoldata_tui.training import capture_policy
from smoldata_tui.training.capture_policy import NOT_TRAINABLE, TRAINING_OUTPUT_CAP, CaptureFailed
from smoldata_tui.training.requests import RequestLog
from smoldata_tui.training.sampling import sampling_text

__all__ = ["NOT_TRAINABLE", "TRAINING_OUTPUT_CAP", "CaptureFailed", "CaptureRecord", "ModelCapture", "describe_capture",
           "prefetch"]
PROBE_GRACE_S = 2.0  # past the probe's budget, which its requests' own timeouts already keep to
_prefetched: threading.Thread | None = None
_prefetch_lock = threading.Lock()


def prefetch() -> None:
    """Start importing openenv's capture layer in the background (idempotent)."""
    global _prefetched
    with _prefetch_lock:
        if _prefetched is None:
            _prefetched = threading.Thread(target=_import_capture, name="openenv-import", daemon=True)
            _prefetched.start()


def _import_capture() -> None:
    try:
        capture_policy.capture_modules()
        capture_policy.import_openenv("openenv.core.harness.training")  # what the host needs at the end
    except Exception:  # noqa: BLE001 - the real import below reports it
        return


def _capture_modules():
    prefetch()
    _prefetched.join()
    return capture_policy.capture_modules()


@dataclass
class CaptureRecord:
    """What ``run.meta.json`` says about the capture (``capture``); no credentials."""

    enabled: bool = True
    where: str = "host"  # "host": in smoldata-tui's process; "sandbox": beside OpenCode
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
    port: int | None = None  # where it listened (on the host, or inside the sandbox), while the episode ran
    openenv_version: str | None = None  # the openenv the sandbox's proxy ran (where="sandbox")
    openenv_from: str | None = None  # where="sandbox": "sandbox" (its own openenv) or "bundle" (the host's, uploaded)
    sampling: dict[str, Any] | None = None  # training's sampling policy on the session (--sampling); None: engine defaults
    context_window: int | None = None  # the served model's, for the budget forecast (training/budget.py)
    context_window_from: str | None = None  # "given" (--context-window) or "endpoint" (/v1/models max_model_len)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def update(self, found: dict[str, Any]) -> None:
        """Take the fields a probe or an export settled (unknown keys are ignored)."""
        for key, value in found.items():
            if key in self.__dataclass_fields__:
                setattr(self, key, value)


def level_line(record: CaptureRecord) -> str:
    return f"capture level {record.level}: " + ("trainable (token ids and logprobs)" if record.trainable else record.not_trainable_because)


def describe_capture(record: object) -> str | None:
    """``run.meta.json``'s ``capture`` in one line, as the viewer shows it; None when there is no
    record (opencode_env's own proxy, or a file written before capture existed)."""
    if not isinstance(record, dict) or not record:
        return None
    if record.get("enabled") is False:
        return "off (--no-capture)"
    if isinstance(record.get("failed"), str):
        return f"failed: {record['failed']}"
    if record.get("started") is False:
        return "not started (the episode ended before the capture proxy stage)"
    level = record.get("level")
    if not isinstance(level, str) or not level:
        return "on (no level recorded)"
    why = record.get("not_trainable_because")
    return f"{level}: " + ("trainable" if record.get("trainable") is True else why if isinstance(why, str) else "not trainable")


class ModelCapture:
    """One episode's capture proxy on the host. ``start`` → :attr:`base_url` / :attr:`session_id`
    for OpenCode → ``training_trace`` → ``stop`` (safe to call on every path, more than once)."""

    def __init__(self, *, llm_url: str, model: str, api_key: str, requests_path: Path,
                 sandbox_host: str = "127.0.0.1", max_output_tokens: int = TRAINING_OUTPUT_CAP,
                 sampling: dict[str, Any] | None = None, cancel: threading.Event | None = None,
                 deadline: float | None = None) -> None:  # fmt: skip
        self.llm_url = llm_url
        self._cancel = cancel  # the episode's: a stop ends start() at once, the probe left behind
        self._deadline = deadline  # time.monotonic() when the run's --timeout runs out; bounds the probe
        self.model = model
        self._api_key = api_key
        self.sandbox_host = sandbox_host
        self.record = CaptureRecord(max_output_tokens=max_output_tokens, requests=requests_path.name, sampling=sampling)
        self.requests = RequestLog(requests_path)
        self._server = None
        self._admin_key = secrets.token_urlsafe(24)
        self.session_id: str | None = None
        self.port: int | None = None

    def __repr__(self) -> str:  # never the keys, nor a password in the URL
        return f"ModelCapture({masked_url(self.llm_url)!r}, {self.model!r}, level={self.record.level!r})"

    @property
    def base_url(self) -> str:
        """Where OpenCode in the sandbox sends its requests."""
        return f"http://{self.sandbox_host}:{self.port}/v1"

    @property
    def request_count(self) -> int:
        return self.requests.count

    def start(self, say: Callable[[str], None]) -> None:
        say("loading openenv's capture layer")
        runner, validate_llm, _export, _contract = self._unless_cancelled(_capture_modules)
        budget = capture_policy.probe_budget(None if self._deadline is None else self._deadline - time.monotonic())
        say(f"probing {masked_url(self.llm_url)} for token ids and logprobs (at most {budget:.0f} s)")
        # openenv's probe blocks in urllib for its whole timeout: it runs on a thread of its own,
        # so a stop acts at once; its requests' own timeouts end that thread within the budget.
        self.record.update(self._unless_cancelled(
            lambda: capture_policy.probe(validate_llm, self.llm_url, self.model, self._api_key, budget),
            timeout_s=budget + PROBE_GRACE_S))
        capture_policy.require_token_capture(self.record.level, self.record.sampling)
        self._server, self.port = capture_policy.serve(
            runner, llm_url=self.llm_url, model=self.model, api_key=self._api_key, level=self.record.level,
            admin_key=self._admin_key, on_request=self.requests.add, max_output_tokens=self.record.max_output_tokens,
            host=self.sandbox_host)  # the sandbox shares this host's loopback: nobody else may use the key behind it
        self.record.port = self.port
        self.session_id = capture_policy.mint_session(self.port, self._admin_key, self.record.sampling)
        say(level_line(self.record))
        say(f"capture proxy on port {self.port}: max_tokens ≤ {self.record.max_output_tokens}, thinking disabled, model {self.model}, "
            f"sampling: {sampling_text(self.record.sampling)}")

    def _unless_cancelled(self, step, timeout_s: float | None = None):
        try:
            return call_unless_cancelled(step, self._cancel, timeout_s)
        except Cancelled:
            raise CaptureFailed("cancelled") from None
        except TimedOut:
            raise CaptureFailed(capture_policy.no_answer(timeout_s - PROBE_GRACE_S)) from None

    def training_trace(self):
        """openenv's ``TrainingTrace`` of the session, or None with the reason in the record."""
        if self._server is None or self.session_id is None:
            return None
        _runner, _validate, export, contract = _capture_modules()
        trace, found = capture_policy.export_trace(export, contract, self._server, self.session_id, self.record.level)
        self.record.update(found)
        return trace

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()
