"""Which model the agent talks to: a real OpenAI-compatible endpoint, or the replay model.

Defaults follow the environment: ``SANDBOX_VLLM_URL`` (``/v1`` appended, as its TaskFactory
does) and ``SANDBOX_VLLM_KEY``. ``--model replay:PATH`` starts a :class:`ReplayServer` on
loopback instead. The API key lives in this object only; it is never logged or saved (the
saved config is redacted), and ``repr`` hides it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPLAY_PREFIX = "replay:"
REPLAY_API_KEY = "replay-model-needs-no-key"


class EndpointError(ValueError):
    """The model endpoint is not usable as given; the message says what is missing."""


@dataclass
class ModelEndpoint:
    base_url: str
    model: str
    api_key: str = field(repr=False)
    replay: object | None = None  # the running ReplayServer, for --model replay:PATH
    replay_source: Path | None = None
    name: str | None = None  # the label when it is neither the model nor a replay (a fork's)
    fork: dict | None = None  # run.meta.json's fork record: {parent, at_step, model, edited}

    @property
    def label(self) -> str:
        """How the model is named on screen and in saved metadata (never the key)."""
        if self.name:
            return self.name
        return f"replay:{self.replay_source}" if self.replay_source else self.model

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no message, screen or saved file may show: the key, and a password in the URL
        (``http://user:pass@host/v1``), which stage messages and errors quote."""
        try:
            parts = urlsplit(self.base_url)
            password = parts.password
        except ValueError:  # an unparsable port: the URL is quoted only in the error that says so
            return (self.api_key,)
        if not password:
            return (self.api_key,)
        return (self.api_key, f"{parts.username or ''}:{password}", password)

    def divergences(self) -> list[dict]:
        return list(self.replay.divergences) if self.replay is not None else []

    def close(self) -> None:
        if self.replay is not None:
            self.replay.close()
            self.replay = None


def open_endpoint(
    *,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    environ: Mapping[str, str] | None = None,
    divergence_path: Path | None = None,
) -> ModelEndpoint:
    """Resolve the endpoint before any slow work starts, so a missing setting fails at once."""
    environ = os.environ if environ is None else environ
    if model and model.startswith(REPLAY_PREFIX):
        return _replay(Path(model[len(REPLAY_PREFIX) :]).expanduser(), divergence_path)
    if not model:
        raise EndpointError("no model: pass --model NAME (or --model replay:TRACE to replay a recorded episode)")
    if base_url is None:
        vllm_url = environ.get("SANDBOX_VLLM_URL")
        if not vllm_url:
            raise EndpointError("no model endpoint: pass --base-url URL or set SANDBOX_VLLM_URL")
        base_url = vllm_url.rstrip("/") + "/v1"
    if api_key is None:
        api_key = environ.get("SANDBOX_VLLM_KEY")
        if api_key is None:
            raise EndpointError("no API key: pass --api-key KEY or set SANDBOX_VLLM_KEY")
    if not _sendable_in_a_header(api_key):
        # It goes out as `Authorization: Bearer KEY`: httpx would fail deep in the capture proxy.
        raise EndpointError("the API key has characters an HTTP header cannot carry (only printable ASCII)")
    return ModelEndpoint(base_url=base_url, model=model, api_key=api_key)


def _sendable_in_a_header(value: str) -> bool:
    return all(" " <= character <= "~" for character in value)


def _replay(source: Path, divergence_path: Path | None) -> ModelEndpoint:
    from smoldata_tui.replay.script import ReplayScript
    from smoldata_tui.replay.server import ReplayServer

    if not source.is_file():
        raise EndpointError(f"replay: {source}: no such trace file")
    try:
        script = ReplayScript.from_trace(source)
    except (OSError, ValueError) as exc:
        raise EndpointError(f"replay: {source}: {exc}") from None
    if not script.turns:
        raise EndpointError(f"replay: {source}: the trace has no assistant turns to replay")
    server = ReplayServer(script, divergence_path=divergence_path).start()
    return ModelEndpoint(
        base_url=server.base_url, model="replay", api_key=REPLAY_API_KEY, replay=server, replay_source=source
    )
