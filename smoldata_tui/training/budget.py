"""The budget forecast: each step's tokens against what training gives a turn.

Training caps a turn's completion at 4096 tokens (the capture policy's ``max_output_tokens``) and
the served model holds prompt + completion in its context window (openenv's capture clamps the
output to what is left). An episode recorded under another cap (``--no-capture``, the
opencode-env harness, an export of a real run) can hold turns training would have cut. Per step,
from the stream's ``step_finish`` token counts (prompt = ``input`` + ``cache.read``, completion =
``output`` + ``reasoning``):

* ``budget_completion_cut`` (warning): a step whose completion is over training's cap;
* ``budget_context_full`` (warning): a prompt that fills the context window (no room to answer);
* ``budget_context_cut`` (warning): prompt + completion over the window: training would have cut
  the completion at window − prompt.

The window comes from ``run.meta.json``'s ``capture.context_window`` (``--context-window N``, or the
endpoint's ``/v1/models`` ``max_model_len`` read when the capture proxy starts); where it is unknown
there is no context finding.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from smoldata_tui.trace.integrity import scan_events
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.training.capture_policy import TRAINING_OUTPUT_CAP

MAX_MODELS_BYTES = 1 << 20  # a /v1/models answer is a few hundred bytes


@dataclass(slots=True)
class StepTokens:
    step: int  # counted from 1 at each step_start, as the timeline counts
    line: int
    event: int
    prompt: int
    completion: int


def _count(value: object) -> int:
    return value if type(value) is int and 0 <= value < 1 << 53 else 0


class StepReader:
    """Takes a trace's events (:func:`scan_events`) and keeps each finished step's prompt and
    completion tokens as OpenCode reported them."""

    def __init__(self) -> None:
        self.steps: list[StepTokens] = []
        self._step = 0

    def take(self, value: object, line: int, event: int) -> None:
        if type(value) is not dict:
            return
        kind = value.get("type")  # every step event of every trace check reads passes here
        if kind == "step_start":
            self._step += 1
        elif kind == "step_finish":
            part = value.get("part")
            tokens = part.get("tokens") if type(part) is dict else None
            tokens = tokens if type(tokens) is dict else {}
            cache = tokens.get("cache")
            cache = cache if type(cache) is dict else {}
            self.steps.append(StepTokens(self._step, line, event, _count(tokens.get("input")) + _count(cache.get("read")),
                                         _count(tokens.get("output")) + _count(tokens.get("reasoning"))))  # fmt: skip


    def merge(self, later: StepReader, events_before: int) -> None:
        """Continue with the steps of the trace's next part, read on their own (its events and
        steps counted from 0, ``events_before`` events before it)."""
        for step in later.steps:
            step.step += self._step
            step.event += events_before
        self.steps += later.steps
        self._step += later._step


def step_tokens(trace_path: str | os.PathLike[str]) -> list[StepTokens]:
    reader = StepReader()
    scan_events(trace_path, reader.take)
    return reader.steps


def context_window_of(metadata: EpisodeMetadata | None) -> int | None:
    capture = metadata.capture if metadata is not None and isinstance(metadata.capture, dict) else {}
    window = capture.get("context_window")
    return window if type(window) is int and window > 0 else None


def forecast(steps: list[StepTokens], window: int | None, cap: int = TRAINING_OUTPUT_CAP) -> list[Finding]:
    found: list[Finding] = []
    for step in steps:
        if step.completion > cap:
            found.append(Finding("budget_completion_cut", Severity.WARNING, step.line, step.event,
                                 f"step {step.step} wrote {step.completion:,} completion tokens: training's cap "
                                 f"({cap:,}) would have cut it"))  # fmt: skip
        if window is None:
            continue
        if step.prompt >= window:
            found.append(Finding("budget_context_full", Severity.WARNING, step.line, step.event,
                                 f"step {step.step}'s prompt ({step.prompt:,} tokens) fills the context window "
                                 f"({window:,}): training could not run this turn"))  # fmt: skip
        elif step.prompt + step.completion > window:
            found.append(Finding("budget_context_cut", Severity.WARNING, step.line, step.event,
                                 f"step {step.step}: prompt {step.prompt:,} + completion {step.completion:,} tokens is over "
                                 f"the context window ({window:,}): training would have cut it at {window - step.prompt:,}"))  # fmt: skip
    return found


def budget_findings(trace_path: str | os.PathLike[str], metadata: EpisodeMetadata | None) -> list[Finding]:
    """The forecast for a trace file; none when it cannot be read (its reader says why)."""
    try:
        return forecast(step_tokens(trace_path), context_window_of(metadata))
    except OSError:
        return []


def budget_line(prompts: list[int], completions: list[int], window: int | None) -> str:
    """One line for the Training tab: the largest prompt against the window ("?" when unknown),
    the largest completion against training's cap."""
    if not prompts:
        return "budget: no model call"
    largest = max(prompts)
    where = f"/{window:,} ({largest / window:.0%})" if window else " (window ?)"  # one row of the tab
    return f"budget: prompt ≤ {largest:,}{where} · out ≤ {max(completions):,}/{TRAINING_OUTPUT_CAP:,}"


def endpoint_context_window(base_url: str, model: str, api_key: str | None, timeout: float = 5.0) -> int | None:
    """The served model's ``max_model_len`` from the endpoint's ``/v1/models`` (vLLM reports it),
    or None when the endpoint does not say (or cannot be asked)."""
    import urllib.request  # here: check never asks an endpoint

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        request = urllib.request.Request(base_url.rstrip("/") + "/models", headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read(MAX_MODELS_BYTES + 1)[:MAX_MODELS_BYTES])
    except (OSError, ValueError):
        return None
    entries = [entry for entry in data.get("data", []) if isinstance(entry, dict)] if isinstance(data, dict) else []
    named = [entry for entry in entries if entry.get("id") == model] or (entries if len(entries) == 1 else [])
    window = named[0].get("max_model_len") if named else None
    return window if type(window) is int and window > 0 else None


def training_budget_line(training_path: str | os.PathLike[str], prompts: list[int], completions: list[int]) -> str:
    """:func:`budget_line` for the turns of ``run.training.json``, the window from the
    ``run.meta.json`` beside it."""
    from smoldata_tui.store.metadata_reader import load_metadata

    path = os.fspath(training_path)
    meta = path.removesuffix(".training.json") + ".meta.json" if path.endswith(".training.json") else None
    return budget_line(prompts, completions, context_window_of(load_metadata(meta) if meta else None))
