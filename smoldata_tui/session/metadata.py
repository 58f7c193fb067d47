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
      "owner": {"pid": 4242, "start_time": 123456, "boot_id": "…", "host": "box"},  # the process running it
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
shows that.

Secrets never reach the file or the screen: :func:`~smoldata_tui.session.credentials.redact` drops every config key whose
name contains key/token/secret/password/authorization and every value that looks like a
credential; :func:`load_metadata` redacts again, so a file written by another tool is safe
to show too. Pure: no Textual, no network.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from smoldata_tui.session.credentials import redact, redact_text
from smoldata_tui.session.owner import owner_alive
from smoldata_tui.trace.reader import read_at_most

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
MAX_METADATA_BYTES = 4 << 20  # a metadata file is small; anything bigger is not one
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
    # Where it ran: {id, name, source} for a remote sandbox, and ``transfer`` {log_bytes,
    # wire_bytes}: what following the agent's log cost on the network.
    sandbox: dict = field(default_factory=dict)
    proxy_trace: str | None = None  # opencode_env's per-turn proxy records, beside the trace
    error: dict | None = None  # why the run errored: {"stage", "message"}; null otherwise
    stop_reason: str | None = None  # what stopped the episode early (a key, a signal, a closed terminal)
    owner: dict = field(default_factory=dict)  # {pid, start_time, boot_id, host} of the running process
    # Each host limit an agent-controlled size reached: {cap, limit, seen} (docs/episode-format.md).
    caps_hit: list[dict] = field(default_factory=list)
    # The capture proxy: {enabled, level, trainable, max_output_tokens, thinking, requests,
    # training_trace, not_trainable_because, ...} (smoldata_tui.training.capture.CaptureRecord).
    capture: dict = field(default_factory=dict)
    # The task's instruction as the agent was given it (the first PROMPT_CAP characters).
    prompt: str | None = None
    schema_version: int = SCHEMA_VERSION

    @property
    def effective_status(self) -> str | None:
        return effective_status(self)

    def to_json(self) -> dict:
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
            "sandbox": redact(self.sandbox),
            "proxy_trace": self.proxy_trace,
            "error": _error(self.error),
            "stop_reason": self.stop_reason,
            "owner": dict(self.owner),
            "caps_hit": list(self.caps_hit),
            "capture": redact(self.capture),
            "prompt": self.prompt,
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
    if metadata.status == "running" and owner_alive(metadata.owner) is False:
        return "interrupted"
    return metadata.status


def mark_interrupted(path: str | os.PathLike[str]) -> bool:
    """Rewrite a saved episode whose owner is gone as ``interrupted``; True when it was one."""
    metadata = load_metadata(path)
    if metadata is None or metadata.status != "running" or effective_status(metadata) != "interrupted":
        return False
    metadata.status = "interrupted"
    metadata.stop_reason = metadata.stop_reason or "its process ended without saving (killed or crashed)"
    save_metadata(path, metadata)
    return True


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


def metadata_path_for(trace: str | os.PathLike[str]) -> Path:
    """``run.jsonl`` → ``run.meta.json`` in the same folder."""
    path = Path(trace)
    return path.with_name(path.stem + METADATA_SUFFIX)


# --- reading -------------------------------------------------------------------------------------
class _Reader:
    """Takes fields out of the decoded JSON, noting every one of the wrong type."""

    def __init__(self, data: dict, problems: list[str]) -> None:
        self.data = data
        self.problems = problems

    def text(self, name: str, source: dict | None = None) -> str | None:
        value = (self.data if source is None else source).get(name)
        if value is None or isinstance(value, str):
            return value
        self.problems.append(f"{name} should be a string, not {type(value).__name__}: ignored")
        return None

    def number(self, name: str, source: dict | None = None, *, label: str | None = None) -> float | None:
        value = (self.data if source is None else source).get(name)
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return value
        self.problems.append(f"{label or name} should be a number, not {value!r}: ignored")
        return None

    def integer(self, name: str) -> int | None:
        value = self.number(name)
        if value is None:
            return None
        if float(value).is_integer():
            return int(value)
        self.problems.append(f"{name} should be a whole number, not {value!r}: ignored")
        return None


def _grade(reader: _Reader) -> Grade | None:
    raw = reader.data.get("grade")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.problems.append(f"grade should be an object, not {type(raw).__name__}: ignored")
        return None
    output, error = reader.text("grader_output", raw), reader.text("grader_error", raw)
    return Grade(
        env_reward=reader.number("env_reward", raw),
        correctness=reader.number("correctness", raw),
        grader_output=redact_text(output) if output is not None else None,
        grader_error=redact_text(error) if error is not None else None,
    )


def _timings(reader: _Reader) -> dict[str, float]:
    raw = reader.data.get("timings")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.problems.append(f"timings should be an object, not {type(raw).__name__}: ignored")
        return {}
    timings = {}
    for stage in raw:
        seconds = reader.number(stage, raw, label=f"timings.{stage}")
        if seconds is not None:
            timings[str(stage)] = seconds
    return timings


def metadata_from_json(data: object, problems: list[str]) -> EpisodeMetadata | None:
    """Build the metadata from decoded JSON; what cannot be used is described in ``problems``."""
    if not isinstance(data, dict):
        problems.append(f"expected a JSON object, found {type(data).__name__}")
        return None
    if data.get("format") not in (None, FORMAT):
        problems.append(f"format is {data.get('format')!r}, not {FORMAT!r}")
        return None
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        problems.append(f"schema_version {version!r} is not a number; reading it as version {SCHEMA_VERSION}")
        version = SCHEMA_VERSION
    elif version > SCHEMA_VERSION:
        problems.append(
            f"schema_version {version} is newer than this smoldata-tui reads ({SCHEMA_VERSION}); upgrade it"
        )
        return None
    reader = _Reader(data, problems)
    status = reader.text("status")
    if status is not None and status not in STATUSES:
        problems.append(f"status {status!r} is not one of {', '.join(STATUSES)}")
    return EpisodeMetadata(
        task=reader.text("task"),
        backend=reader.text("backend"),
        model=reader.text("model"),
        harness=reader.text("harness"),
        opencode_version=reader.text("opencode_version"),
        started_at=reader.text("started_at"),
        finished_at=reader.text("finished_at"),
        status=status,
        exit_code=reader.integer("exit_code"),
        grade=_grade(reader),
        timings=_timings(reader),
        config=_object(data, "config", problems),
        trace=reader.text("trace"),
        recovered_calls=_objects(data, "recovered_calls", problems),
        sandbox=_object(data, "sandbox", problems),
        proxy_trace=reader.text("proxy_trace"),
        error=_read_error(data, problems),
        stop_reason=reader.text("stop_reason"),
        owner=_object(data, "owner", problems),
        caps_hit=_objects(data, "caps_hit", problems),
        capture=_object(data, "capture", problems),
        prompt=reader.text("prompt"),
        schema_version=version,
    )


def _read_error(data: dict, problems: list[str]) -> dict | None:
    raw = data.get("error")
    if raw is not None and not isinstance(raw, dict):
        problems.append(f"error should be an object, not {type(raw).__name__}: ignored")
        return None
    return _error(raw)


def _error(value: dict | None) -> dict | None:
    """``{"stage", "message"}`` as strings, credential-looking text masked; None when absent."""
    if not value:
        return None
    return {name: redact_text(str(value.get(name) or "")) for name in ("stage", "message")}


def _object(data: dict, name: str, problems: list[str]) -> dict:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{name} should be an object, not {type(value).__name__}: ignored")
        return {}
    return redact(value)


def _objects(data: dict, name: str, problems: list[str]) -> list[dict]:
    items = data.get(name)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        problems.append(f"{name} should be a list of objects: ignored")
        return []
    return items


def load_metadata(path: str | os.PathLike[str], problems: list[str] | None = None) -> EpisodeMetadata | None:
    """Read a metadata file; None when it is absent or unusable.

    Never raises for a bad file: each reason the file (or a field of it) could not be used is
    appended to ``problems`` as one sentence, for the caller to show.
    """
    notes: list[str] = []
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = read_at_most(handle, MAX_METADATA_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        notes.append(f"cannot read it: {exc.strerror or exc}")
        data = None
    metadata = None
    if data is not None:
        if len(data) > MAX_METADATA_BYTES:
            notes.append(f"it is larger than {MAX_METADATA_BYTES >> 20} MB, so it is not an episode metadata file")
        else:
            try:
                decoded = _decode_json(data)
            except UnicodeDecodeError:
                notes.append("it is not UTF-8 text")
            except ValueError as exc:  # json.JSONDecodeError, RecursionError is not expected here
                notes.append(f"it is not valid JSON ({exc})")
            else:
                metadata = metadata_from_json(decoded, notes)
    if problems is not None:
        problems.extend(f"{os.path.basename(path)}: {note}" for note in notes)
    return metadata


def _decode_json(data: bytes) -> object:
    """``json.loads(data.decode("utf-8"))``, by orjson where the two agree.

    orjson refuses NaN, lone surrogates and a BOM, which json reads (or reports in its own
    words): those go to json. It reads an integer past 64 bits as a float where json keeps it
    whole, so a document with a 19-digit run goes to json too. What is left, both read alike.
    """
    if _LONG_DIGITS.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8"))


_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def save_metadata(path: str | os.PathLike[str], metadata: EpisodeMetadata,
                  scrub: Callable[[str], str] | None = None) -> None:  # fmt: skip
    """Write atomically (a temporary file in the same folder, then a rename): a reader sees the
    old file or the new one, never half of one. The config is redacted on the way out, and the
    whole text passes ``scrub`` (the episode's :class:`SecretScrubber`) last."""
    payload = json.dumps(metadata.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomically(Path(path), scrub(payload) if scrub is not None else payload)


def write_text_atomically(path: Path, text: str) -> None:
    """A temporary file in the same folder, synced, then renamed over ``path``."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
