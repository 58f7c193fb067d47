"""Where a replayed episode stops matching its recording, kept for the session to save.

Two kinds of record, one JSON object each (also appended to a JSON Lines file when a path is
given, one line per record, flushed at once so a killed run keeps what it found):

* ``result_changed``: a tool call sent again got another result than in the recording:
  ``{"kind", "turn", "call_id", "tool", "recorded", "now"}`` (full texts, as OpenCode sent them);
* ``extra_request``: OpenCode asked for a turn past the recording's end:
  ``{"kind", "turn", "recorded_turns"}``.

Results are compared after :func:`normalise_result`, which removes what differs between two
runs of the same calls without meaning anything: line endings, trailing blanks, where OpenCode
stored a truncated output, and the working directory (the recording's and today's).
Thread-safe: the server's request threads report into one log.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

__all__ = ["DIVERGENCE_FILE", "DivergenceLog", "describe_divergence", "load_divergences", "normalise_result",
           "WORKDIR_PLACEHOLDER"]

DIVERGENCE_FILE = "run.divergence.json"  # beside a replayed episode's trace, when it diverged

WORKDIR_PLACEHOLDER = "<workdir>"
# A bash/read output cut by OpenCode ends with the path of the full output, a fresh tool id
# under $XDG_DATA_HOME every run.
_SAVED_OUTPUT = re.compile(r"(Full output saved to: )\S+")
_TRAILING_BLANKS = re.compile(r"[ \t]+$", re.MULTILINE)


def normalise_result(text: str, workdirs: Iterable[str] = ()) -> str:
    """``text`` with run-specific details replaced, for comparing a result with its recording."""
    text = text.replace("\r\n", "\n")
    text = _SAVED_OUTPUT.sub(r"\1<saved output>", text)
    # Longest first, so /root/workdir is not half-replaced by a shorter /root.
    for workdir in sorted({w.rstrip("/") for w in workdirs if w and w.rstrip("/")}, key=len, reverse=True):
        text = text.replace(workdir, WORKDIR_PLACEHOLDER)
    return _TRAILING_BLANKS.sub("", text).rstrip("\n")


class DivergenceLog:
    """The divergences found so far, optionally mirrored to a JSON Lines file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = Path(path) if path is not None else None
        self._file: IO[str] | None = None
        self._records: list[dict[str, Any]] = []
        self._checked_calls: set[str] = set()
        self._lock = threading.Lock()

    def first_check(self, call_id: str) -> bool:
        """True the first time a call id is seen: OpenCode re-sends every earlier result."""
        with self._lock:
            if call_id in self._checked_calls:
                return False
            self._checked_calls.add(call_id)
            return True

    def result_changed(self, *, turn: int, call_id: str, tool: str, recorded: str, now: str) -> None:
        self._add(
            {"kind": "result_changed", "turn": turn, "call_id": call_id, "tool": tool, "recorded": recorded, "now": now}
        )

    def extra_request(self, *, turn: int, recorded_turns: int) -> None:
        self._add({"kind": "extra_request", "turn": turn, "recorded_turns": recorded_turns})

    @property
    def records(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(record) for record in self._records]

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._records.append(record)
            if self._path is not None:
                if self._file is None:
                    self._path.parent.mkdir(parents=True, exist_ok=True)
                    self._file = open(self._path, "a", encoding="utf-8")  # noqa: SIM115 - open until close()
                self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
                self._file.flush()


def _first_difference(recorded: str, now: str) -> tuple[str, str]:
    """The first line where the two results differ (each side's, stripped)."""
    old, new = recorded.splitlines() or [""], now.splitlines() or [""]
    for position in range(max(len(old), len(new))):
        left = old[position].strip() if position < len(old) else "(nothing)"
        right = new[position].strip() if position < len(new) else "(nothing)"
        if left != right:
            return left or "(blank line)", right or "(blank line)"
    return old[0].strip(), new[0].strip()


def describe_divergence(record: dict, limit: int = 70) -> str:
    """One line saying what diverged: the turn, the tool and the first line that differs."""
    from smoldata_tui.trace.text import clip, neutralize

    def shown(value: object) -> str:
        return clip(neutralize(str(value), keep_newlines=False), limit)

    turn = record.get("turn")
    step = f"step {turn + 1}" if isinstance(turn, int) else "a step"
    if record.get("kind") == "extra_request":
        return f"{step}: the run asked for more than the recording's {shown(record.get('recorded_turns'))} steps"
    if record.get("kind") == "result_changed":
        was, now = _first_difference(str(record.get("recorded") or ""), str(record.get("now") or ""))
        return f"{step} {shown(record.get('tool'))}: recorded \u201c{shown(was)}\u201d, now \u201c{shown(now)}\u201d"
    return f"{step}: {shown(record.get('kind'))}"


def load_divergences(trace_path: str | os.PathLike[str]) -> list[dict]:
    """The divergences saved beside a replayed episode's trace ([] when there are none or it is unreadable)."""
    path = Path(trace_path).with_name(DIVERGENCE_FILE)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
