"""The episode's side of the capture proxy: start it for an endpoint, record the OpenCode the
sandbox runs, and at the end save ``run.training.json`` and stop it.

Where the proxy runs: for a local sandbox, on the host, in this process (a bubblewrap sandbox
shares the host's network, so ``127.0.0.1:<port>`` inside it is the host's port, which
:func:`require_reachable` checks). For a Daytona sandbox, inside the sandbox
(:mod:`smoldata_tui.training.sandbox_capture`): a remote sandbox cannot reach the user's host.
Both are the same policy code and end in the same :func:`finish_capture`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.sandbox.protocol import exec_repeatable
from smoldata_tui.session.episode_spec import CAPTURE_STAGE
from smoldata_tui.opencode.config import agent_environment
from smoldata_tui.training.budget import endpoint_context_window
from smoldata_tui.training.capture import CaptureFailed, ModelCapture
from smoldata_tui.training.sandbox_capture import SandboxCapture
from smoldata_tui.training.requests import requests_path_for
from smoldata_tui.training.trace_file import save_training_trace, training_path_for

__all__ = ["CaptureFailed", "capture_not_running", "finish_capture", "opencode_version_in", "require_reachable",
           "start_capture"]


def start_capture(endpoint, trace_path: Path, say: Callable[[str], None], *, sandbox=None,
                  scrub: Callable[[str], str] = lambda text: text, cancel=None, deadline: float | None = None,
                  sampling: dict | None = None, context_window: int | None = None) -> ModelCapture | SandboxCapture:  # fmt: skip
    """A running capture proxy for ``endpoint`` (a :class:`ModelEndpoint`), or CaptureFailed: on the
    host, or with ``sandbox`` (a remote one) inside it, where ``scrub`` masks what it brings back.
    ``cancel`` (set: CaptureFailed now) and ``deadline`` (``time.monotonic()`` when the run's
    timeout runs out, which bounds the endpoint's probe) are the episode's.
    ``sampling``: training's sampling policy for its session (``--sampling``), None for the engine's."""
    requests_path = requests_path_for(trace_path)
    if sandbox is None:
        capture = ModelCapture(llm_url=endpoint.base_url, model=endpoint.model, api_key=endpoint.api_key,
                               requests_path=requests_path, sampling=sampling, cancel=cancel, deadline=deadline)  # fmt: skip
    else:
        capture = SandboxCapture(sandbox, llm_url=endpoint.base_url, model=endpoint.model, api_key=endpoint.api_key,
                                 requests_path=requests_path, scrub=scrub, cancel=cancel, sampling=sampling,
                                 deadline=deadline)  # fmt: skip
    try:
        capture.start(say)
    except BaseException:
        capture.stop()
        raise
    record_context_window(capture.record, endpoint, context_window, say)
    return capture


def record_context_window(record, endpoint, given: int | None, say: Callable[[str], None]) -> None:
    """The served model's context window for the budget forecast: as given, else as the endpoint's
    ``/v1/models`` says (vLLM's ``max_model_len``), else unknown."""
    window = given or endpoint_context_window(endpoint.base_url, endpoint.model, endpoint.api_key)
    record.context_window, record.context_window_from = window, ("given" if given else "endpoint") if window else None
    say(f"context window {window:,} tokens ({record.context_window_from})" if window
        else "context window unknown (the endpoint does not say; --context-window N): no context forecast")


def require_reachable(sandbox, capture: ModelCapture) -> None:
    """Fail now, with the reason, when the sandbox cannot open the proxy's port."""
    probe = f"exec 3<>/dev/tcp/{capture.sandbox_host}/{capture.port}"
    result = sandbox.exec(f"bash -c {shlex.quote(probe)}", timeout=30)
    if result.exit_code != 0:
        raise CaptureFailed(
            f"the sandbox cannot reach the capture proxy at {capture.sandbox_host}:{capture.port} on this host "
            "(it does not share the host's network): run with --no-capture"
        )


def opencode_version_in(sandbox, home: str, opencode: str) -> str | None:
    """``opencode --version`` as the agent command would run it inside the sandbox."""
    binary = "opencode" if opencode == "opencode" else shlex.quote(opencode)
    script = f'export PATH="$HOME/.opencode/bin:$PATH" && {binary} --version 2>/dev/null | head -n 1'
    result = exec_repeatable(sandbox, script, envs=agent_environment(home), timeout=120)
    return (result.stdout.strip() or None) if result.exit_code == 0 else None


def finish_capture(capture: ModelCapture | SandboxCapture, trace_path: Path, scrub: Callable[[str], str], say: Callable[[str], None]) -> dict:
    """Save the training trace (when trainable), stop the proxy, and return ``run.meta.json``'s
    ``capture`` record. Never raises: the episode stands without its training record."""
    try:
        trace = capture.training_trace()
        if trace is not None:
            save_training_trace(trace, trace_path, scrub=scrub)
            capture.record.training_trace = training_path_for(trace_path).name
            say(f"{len(trace.turns)} model call(s) saved for training in {capture.record.training_trace}")
        else:
            say(capture.record.not_trainable_because or "no training trace: the capture saw no model call")
    except Exception as exc:  # noqa: BLE001 - report, keep the episode
        capture.record.not_trainable_because = f"training trace not saved: {type(exc).__name__}: {exc}"
        say(capture.record.not_trainable_because)
    finally:
        capture.stop()
    capture.record.requests = capture.record.requests if capture.request_count else None
    return capture.record.to_json()


def capture_not_running(error, where: str) -> dict:
    """``run.meta.json``'s ``capture`` record when capture was asked for but no proxy ran: it
    ``failed`` with the capture stage's reason (that stage ended the episode), or was never
    ``started`` (the episode ended before that stage). Never ``enabled: false``: that means
    ``--no-capture``."""
    if error is not None and getattr(error, "stage", None) == CAPTURE_STAGE:
        return {"enabled": True, "where": where, "failed": error.reason}
    return {"enabled": True, "where": where, "started": False}
