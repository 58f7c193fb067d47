"""The episode metadata file: what a saved episode knows beyond its trace.

A saved episode is a trace file (``run.jsonl``, the agent's ``opencode run --format json``
output) plus, beside it, ``run.meta.json`` (the trace's stem + ``.meta.json``). Its shape for a
local run of the built-in harness with capture (docs/episode-format.md has one whole file as
written)::

    {
      "format": "smoldata-episode",
      "schema_version": 1,
      "trace": "run.jsonl",
      "task": "sales-top-region",
      "backend": "local",                     # or "daytona"
      "model": "Qwen/Qwen3.5-4B",             # the endpoint's model name, or "replay:PATH"; never a key
      "harness": "builtin",                   # or "opencode-env"
      "opencode_version": "1.18.31",
      "started_at": "2026-01-01T00:00:00Z",   # ISO 8601, UTC
      "finished_at": "2026-01-01T00:01:24Z",  # null while running
      "status": "finished",                   # running / finished / killed / timeout / cancelled / error / interrupted
      "exit_code": 0,                         # the agent's exit code, null while running
      "grade": {                              # null until graded
        "env_reward": 1.0,                    # VerifyResult.env_reward
        "correctness": 1,                     # what tests/grader.py printed
        "grader_output": "{\\"correctness\\": 1}",
        "grader_error": null                  # set when the grader failed (not a zero)
      },
      "timings": {"install OpenCode": 0.0, "create sandbox": 0.07, "capture proxy": 1.19,  # seconds per stage,
                  "stage task": 0.13, "agent running": 13.99, "recover calls": 0.0,       # keyed by the stage's
                  "grading": 0.26},                                                        # name
      "config": {"$schema": "https://opencode.ai/config.json", "model": "intercepted/Qwen/Qwen3.5-4B",
                 "provider": {"intercepted": {"npm": "@ai-sdk/openai-compatible", "name": "Intercepted",
                              "options": {"baseURL": "http://127.0.0.1:39927/v1", "timeout": 600000},
                              "models": {"Qwen/Qwen3.5-4B": {"name": "Intercepted Model"}}}},
                 "tools": {"webfetch": false, "question": false, "task": false},
                 "permission": {"*": "allow"}},   # the opencode.json, apiKey removed (opencode-env: its OpenCodeConfig)
      "recovered_calls": [],
      "sandbox": {"id": "sbx-ebe715bab549", "opencode_version": "1.18.31"},
      "proxy_trace": null,                    # opencode-env: its proxy trace's file name
      "error": null,                          # {"stage", "message"} when status is "error"
      "stop_reason": null,                    # what stopped it early: "q (quit)", "Ctrl+C (cancel confirmed)", "SIGTERM"…
      "owner": {"pid": 4242, "start_time": 123456, "boot_id": "…", "host": "box", "lock": true},  # who runs it
      "caps_hit": [],
      "capture": {"enabled": true, "where": "host", "level": "tokens", "trainable": true, …},
      "prompt": "Find the sales region with the highest total revenue in 2024.…"
    }

Every field but ``format`` and ``schema_version`` may be missing or null. Readers ignore
keys they do not know (newer writers may add some) and refuse a newer major
``schema_version`` with a clear message. The live runner writes the file at the start of an
episode (``status: running``, with its ``owner`` process) and rewrites it, atomically, whenever
something changes. A ``running`` episode whose owner is gone (SIGKILL, a crash, a reboot) never
got to say how it ended: :func:`effective_status` reads it as ``interrupted``, and every reader
shows that. Gone means: the lock on ``run.lock`` beside it is free (the owner holds it for the
whole run, in whatever PID namespace it runs; ``owner.lock`` says it took one), or for an
episode saved before the lock, its pid and start time name no process.

Secrets never reach the file or the screen: :func:`~smoldata_tui.masking.redact` drops every config key whose
name contains key/token/secret/password/authorization and every value that looks like a
credential; :func:`~smoldata_tui.store.metadata_reader.load_metadata` redacts again, so a file
written by another tool is safe to show too. Pure: no Textual, no network.

This module is the model and the names of the files beside a trace; reading a file written by
anyone is :mod:`~smoldata_tui.store.metadata_reader`, writing one atomically
:mod:`~smoldata_tui.store.metadata_writer`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from smoldata_tui.store.owner import LOCK_SUFFIX, owner_alive

FORMAT = "smoldata-episode"
SCHEMA_VERSION = 1
PROMPT_CAP = 256 * 1024  # characters of the task's instruction kept in run.meta.json
METADATA_SUFFIX = ".meta.json"
TRAINING_SUFFIX = ".training.json"  # the training trace the trainer would receive (training/trace_file.py)
REQUESTS_SUFFIX = ".requests.jsonl"  # what each model call asked for (training/requests.py)
# Files beside a trace that are JSON Lines but not OpenCode traces (opencode_env's proxy trace).
SIDECAR_SUFFIXES = (".proxy.jsonl", REQUESTS_SUFFIX)
PROXY_TRACE_NAME = "run.proxy.jsonl"  # what the opencode_env harness names its proxy trace, beside run.jsonl


def is_trace_name(name: str) -> bool:
    """Whether a file name is an agent trace: ``*.jsonl``, but not a sidecar of one."""
    return name.endswith(".jsonl") and not name.endswith(SIDECAR_SUFFIXES)


STATUSES = ("running", "finished", "killed", "timeout", "cancelled", "error", "interrupted")


@dataclass
class Grade:
    env_reward: float | None = None
    correctness: float | None = None
    grader_output: str | None = None
    grader_error: str | None = None

    def to_json(self) -> dict:
        return {
            "env_reward": self.env_reward,
            "correctness": self.correctness,
            "grader_output": self.grader_output,
            "grader_error": self.grader_error,
        }

    def badge(self) -> str:
        """``reward 1.0``, ``grader failed`` or ``correct 0``: for lists and headers."""
        if self.grader_error:
            return "grader failed"
        if self.env_reward is not None:
            return f"reward {self.env_reward:g}"
        if self.correctness is not None:
            return f"correct {self.correctness:g}"
        return "ungraded"


@dataclass
class EpisodeMetadata:
    task: str | None = None
    backend: str | None = None
    model: str | None = None
    harness: str | None = None
    opencode_version: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    status: str | None = None
    exit_code: int | None = None
    grade: Grade | None = None
    timings: dict[str, float] = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    trace: str | None = None
    # Calls still running when the agent was stopped, as ``opencode export`` kept them: each
    # {callID, tool, status, input, partial_output, source}. The stream never shows them.
    recovered_calls: list[dict] = field(default_factory=list)
    # Shell-tool commands the user ended while the agent ran (a hung call): each {command, ran_s, at}.
    # OpenCode's tool returned with the signal's exit status and the agent went on.
    cancelled_calls: list[dict] = field(default_factory=list)
    # Where it ran: {id, name, source} for a remote sandbox, and ``transfer`` {log_bytes,
    # wire_bytes}: what following the agent's log cost on the network.
    sandbox: dict = field(default_factory=dict)
    proxy_trace: str | None = None  # opencode_env's per-turn proxy records, beside the trace
    error: dict | None = None  # why the run errored: {"stage", "message"}; null otherwise
    stop_reason: str | None = None  # what stopped the episode early (a key, a signal, a closed terminal)
    owner: dict = field(default_factory=dict)  # {pid, start_time, boot_id, host, lock} of the running process
    # Each host limit an agent-controlled size reached: {cap, limit, seen} (docs/episode-format.md).
    caps_hit: list[dict] = field(default_factory=list)
    # The capture proxy: {enabled, level, trainable, max_output_tokens, thinking, requests,
    # training_trace, not_trainable_because, ...} (smoldata_tui.training.capture.CaptureRecord).
    capture: dict = field(default_factory=dict)
    # The task's instruction as the agent was given it (the first PROMPT_CAP characters).
    prompt: str | None = None
    # A fork (replay/fork.py): {parent (its trace's path), at_step, model, edited, edited_call}; null otherwise.
    fork: dict | None = None
    schema_version: int = SCHEMA_VERSION
    # Not saved: the run's lock file beside the file this was read from (load_metadata sets it).
    lock_path: str | None = field(default=None, repr=False, compare=False)

    @property
    def effective_status(self) -> str | None:
        return effective_status(self)

    def to_json(self) -> dict:
        # imported here, as in redacted_error: check's cached re-run imports this module, never writes one
        from smoldata_tui.masking import redact

        return {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "trace": self.trace,
            "task": self.task,
            "backend": self.backend,
            "model": self.model,
            "harness": self.harness,
            "opencode_version": self.opencode_version,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "exit_code": self.exit_code,
            "grade": self.grade.to_json() if self.grade is not None else None,
            "timings": dict(self.timings),
            "config": redact(self.config),
            "recovered_calls": list(self.recovered_calls),
            "cancelled_calls": list(self.cancelled_calls),
            "sandbox": redact(self.sandbox),
            "proxy_trace": self.proxy_trace,
            "error": redacted_error(self.error),
            "stop_reason": self.stop_reason,
            "owner": dict(self.owner),
            "caps_hit": list(self.caps_hit),
            "capture": redact(self.capture),
            "prompt": self.prompt,
            "fork": dict(self.fork) if self.fork else None,
        }

    @property
    def duration_s(self) -> float | None:
        """finished_at − started_at, when both are known."""
        start, end = parse_time(self.started_at), parse_time(self.finished_at)
        if start is None or end is None:
            return None
        return max(0.0, (end - start).total_seconds())


def parse_time(text: str | None) -> datetime | None:
    """An ISO 8601 time (``Z`` allowed); naive times are taken as UTC; None when unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """The inverse of :func:`parse_time`, to the second, in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def effective_status(metadata: EpisodeMetadata | None) -> str | None:
    """The status to show: the saved one, except that a ``running`` episode whose owner process
    is gone is ``interrupted`` (it was SIGKILLed or crashed before it could save its end). The one
    place this is decided: the viewer, the picker, the home screen and ``gc`` all ask here."""
    if metadata is None:
        return None
    if metadata.status == "running" and owner_alive(metadata.owner, metadata.lock_path) is False:
        return "interrupted"
    return metadata.status


def sibling_path(trace: str | os.PathLike[str], suffix: str) -> str:
    """``run.jsonl`` → ``run<suffix>`` in the same folder (the stem as ``Path.stem`` cuts it).

    Strings, not Paths: a fleet asks this for every trace, and building Paths cost more than
    reading the sidecars.
    """
    trace = os.fspath(trace)
    cut = trace.rfind("/") + 1  # (string slicing: os.path.split and join cost more, per trace of a fleet)
    name = trace[cut:]
    dot = name.rfind(".")
    stem = name[:dot] if 0 < dot < len(name) - 1 else name
    return trace[:cut] + stem + suffix


def lock_path_for(metadata_path: str | os.PathLike[str]) -> str | None:
    """``run.meta.json`` → ``run.lock``, the file its running owner holds locked
    (:mod:`~smoldata_tui.store.owner`); None for a name without the metadata suffix."""
    path = os.fspath(metadata_path)
    return path[: -len(METADATA_SUFFIX)] + LOCK_SUFFIX if path.endswith(METADATA_SUFFIX) else None


def metadata_path_for(trace: str | os.PathLike[str]) -> Path:
    """``run.jsonl`` → ``run.meta.json`` in the same folder."""
    path = Path(trace)
    return path.with_name(path.stem + METADATA_SUFFIX)


def redacted_error(value: dict | None) -> dict | None:
    """``{"stage", "message"}`` as strings, credential-looking text masked; None when absent."""
    if not value:
        return None
    from smoldata_tui.masking import redact_text

    return {name: redact_text(str(value.get(name) or "")) for name in ("stage", "message")}

