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

from smoldata_tui.store.metadata import REQUESTS_SUFFIX
from smoldata_tui.trace.reader import read_at_most
from smoldata_tui.training.capture_policy import TRAINING_OUTPUT_CAP, request_summary

MAX_REQUESTS_BYTES = 64 << 20  # a summary is a few hundred bytes; this is far past any episode


def requests_path_for(trace: str | os.PathLike[str]) -> Path:
    """``run.jsonl`` → ``run.requests.jsonl`` in the same folder."""
    path = Path(trace)
    return path.with_name(path.stem + REQUESTS_SUFFIX)


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
            return read_at_most(handle, limit + 1)
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
