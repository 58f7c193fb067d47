"""opencode_env's proxy trace (``--harness opencode-env``): one record per model call, as its
logging proxy saw it (request, response, logprobs, tokens, latency). Read here into one summary
row per turn, for the stage log and the viewer's episode panel; the file itself is kept whole.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.trace.text import clip


@dataclass
class ProxyTurn:
    turn: int | None
    with_tools: bool  # a turn of the agent; without tools: a side call (title generation)
    finish_reason: str | None
    completion_tokens: int | None
    prompt_tokens: int | None
    mean_logprob: float | None
    min_logprob: float | None
    latency_s: float | None
    upstream_error: str | None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _logprobs(record: dict) -> list[float]:
    values = record.get("per_token_logps")
    if not isinstance(values, list) or not values:
        entries = record.get("logprobs")
        values = [entry.get("logprob") for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []
    return [number for number in map(_number, values) if number is not None]


def turn_of(record: dict) -> ProxyTurn:
    request = record.get("request") if isinstance(record.get("request"), dict) else {}
    response = record.get("response") if isinstance(record.get("response"), dict) else {}
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    tokens = record.get("completion_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:  # the proxy counts logprobs
        tokens = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else None
    logps = _logprobs(record)
    error = response.get("upstream_error") or response.get("upstream_status")
    return ProxyTurn(
        turn=record.get("turn") if isinstance(record.get("turn"), int) else None,
        with_tools=bool(request.get("tools")),
        finish_reason=record.get("finish_reason") if isinstance(record.get("finish_reason"), str) else None,
        completion_tokens=tokens,
        prompt_tokens=usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None,
        mean_logprob=sum(logps) / len(logps) if logps else None,
        min_logprob=min(logps) if logps else None,
        latency_s=_number(record.get("latency_s")),
        upstream_error=clip(str(error), 200) if error else None,
    )


def load_proxy_trace(path: Path) -> tuple[list[ProxyTurn], list[str]]:
    """The turns of a saved proxy trace, and what could not be read (never raises on bad input)."""
    turns: list[ProxyTurn] = []
    problems: list[str] = []
    try:
        with open(path, "rb") as source:
            for number, line in enumerate(source, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    problems.append(f"{path.name} line {number}: not JSON ({exc})")
                    continue
                if isinstance(record, dict):
                    turns.append(turn_of(record))
                else:
                    problems.append(f"{path.name} line {number}: not an object")
    except OSError as exc:
        problems.append(f"{path.name}: {exc.strerror or exc}")
    return turns, problems


def summary_line(turns: list[ProxyTurn]) -> str:
    tools = sum(turn.with_tools for turn in turns)
    tokens = sum(turn.completion_tokens or 0 for turn in turns)
    errors = sum(turn.upstream_error is not None for turn in turns)
    logps = [turn.mean_logprob for turn in turns if turn.mean_logprob is not None]
    logprob = f", mean logprob {sum(logps) / len(logps):.3f}" if logps else ", no logprobs"
    return (f"proxy trace: {len(turns)} turn(s), {tools} with tools, {tokens} completion tokens{logprob}, "
            f"{errors} upstream error(s)")  # fmt: skip
