"""What each model call asked of the model: ``run.requests.jsonl`` beside an episode.

One JSON object per request that reached the model, in order, written as it is forwarded (so a
crash keeps what was sent): the fields training's policy sets and the tool names offered, never
the messages or headers, so the file holds nothing the agent wrote and no credential::

    {"model": "Qwen/Qwen3.5-4B", "max_tokens": 4096, "max_completion_tokens": null,
     "enable_thinking": false, "logprobs": true, "return_token_ids": true, "top_logprobs": 0,
     "temperature": 1.0, "stream": false, "tools": ["bash", "read", ...], "messages": 3}

The capture proxy writes it (what it forwarded, after its cap and thinking switch); the replay
model keeps the same summaries in memory. :mod:`config_findings` reads it. Pure but for the file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

REQUESTS_SUFFIX = ".requests.jsonl"
TRAINING_OUTPUT_CAP = 4096  # the environment's OpenCodeConfig.proxy_max_tokens_cap
MAX_REQUESTS_BYTES = 64 << 20  # a summary is a few hundred bytes; this is far past any episode


def requests_path_for(trace: str | os.PathLike[str]) -> Path:
    """``run.jsonl`` → ``run.requests.jsonl`` in the same folder."""
    path = Path(trace)
    return path.with_name(path.stem + REQUESTS_SUFFIX)


def request_summary(request: dict[str, Any]) -> dict[str, Any]:
    """What a chat request asked of the model, without its messages."""
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


class RequestLog:
    """Appends summaries to the file as requests are forwarded (thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.count = 0

    def add(self, request: dict[str, Any]) -> None:
        line = json.dumps(request_summary(request), ensure_ascii=False, default=str) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as stream:
            stream.write(line)
            self.count += 1


def read_capped(path: str | os.PathLike[str], limit: int, notes: list[str]) -> bytes | None:
    """Up to ``limit`` + 1 bytes of a sidecar; None when it is absent or unreadable (said in ``notes``)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        notes.append(f"cannot read it: {exc.strerror or exc}")
        return None


def read_requests(path: str | os.PathLike[str], problems: list[str] | None = None) -> list[dict] | None:
    """The summaries in a requests file; None when it is absent. Bad lines are skipped and said."""
    path = os.fspath(path)
    notes: list[str] = []
    data = read_capped(path, MAX_REQUESTS_BYTES, notes)
    found = None if data is None else []
    if data is not None and len(data) > MAX_REQUESTS_BYTES:
        notes.append(f"larger than {MAX_REQUESTS_BYTES >> 20} MB; only its start is read")
    for number, line in enumerate((data or b"")[:MAX_REQUESTS_BYTES].splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if isinstance(item, dict):
            found.append(item)
        else:
            notes.append(f"line {number} is not a JSON object: skipped")
    if problems is not None:
        problems.extend(f"{os.path.basename(path)}: {note}" for note in notes)
    return found
