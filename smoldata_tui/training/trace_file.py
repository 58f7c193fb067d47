"""``run.training.json``: the record a trainer receives for an episode, beside its trace.

The file is exactly openenv's ``TrainingTrace`` serialised (``model_dump_json``): ``schema_version``
1 and ``turns``, each with ``node_id``, ``prompt_token_ids``, ``completion_token_ids``,
``per_token_logps``, ``loss_mask``, ``request`` (messages, tools), ``response`` (choices) and
``metadata``. Nothing else is added to it; what smoldata-tui knows about the capture goes into
``run.meta.json`` (``capture``).

Every turn's ``metadata["native_tool_calls"]`` is set as the environment's
``TaskSession.fetch_training_trace`` sets it: the seed's rule over the saved OpenCode trace (the
trace engine's verdict, :mod:`smoldata_tui.trace.verdict`), ``None`` on a rejected episode (and on
one where the rule itself would crash: the trainer would get no record at all then, which
``run.meta.json`` says).

Secrets: every string in the turns goes through the episode's scrubber (the endpoint key, the
capture session id) and the credential patterns of :mod:`metadata`.

:func:`load_training_trace` reads the file without openenv (the viewer must not wait seconds for
it), checking what ``TrainingTrace`` validates: aligned lengths, masks in {0, 1}, unique node ids.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldata_tui.masking import map_strings, redact_text
from smoldata_tui.store.metadata import TRAINING_SUFFIX
from smoldata_tui.trace import analyze_path
from smoldata_tui.trace.reader import read_at_most

MAX_TRAINING_BYTES = 512 << 20
_REQUIRED = ("node_id", "prompt_token_ids", "completion_token_ids", "per_token_logps", "loss_mask")


def training_path_for(trace: str | os.PathLike[str]) -> Path:
    """``run.jsonl`` → ``run.training.json`` in the same folder."""
    path = Path(trace)
    return path.with_name(path.stem + TRAINING_SUFFIX)


def native_tool_calls_of(trace_path: str | os.PathLike[str]) -> int | None:
    """What the seed's ``fetch_training_trace`` puts in every turn, for this saved trace."""
    verdict = analyze_path(trace_path)[0].verdict
    return None if verdict.wrapper_crash else verdict.native_tool_calls


def save_training_trace(trace, trace_path: Path, *, scrub: Callable[[str], str] = lambda text: text) -> Path:
    """Write openenv's ``TrainingTrace`` beside ``trace_path`` with the seed's native_tool_calls.

    ``trace`` is an ``openenv.core.harness.training.TrainingTrace``; token ids and logprobs are
    numbers, so scrubbing the texts leaves them as they were."""
    from smoldata_tui.training.capture_policy import import_openenv

    TrainingTrace = import_openenv("openenv.core.harness.training").TrainingTrace
    calls = native_tool_calls_of(trace_path)
    data = trace.model_dump(mode="json")
    for turn in data["turns"]:
        for part in ("request", "response", "metadata"):
            turn[part] = map_strings(turn[part], lambda text: redact_text(scrub(text)))
        turn["metadata"]["native_tool_calls"] = calls
    clean = TrainingTrace.model_validate(data)
    path = training_path_for(trace_path)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(clean.model_dump_json(), encoding="utf-8")
    os.replace(temporary, path)
    return path


@dataclass(frozen=True)
class CaptureProblem:
    """A validation failure: ``level`` is openenv's (FATAL, WARN, INFO); ``turn`` is 0-based."""

    level: str
    code: str
    detail: str
    turn: int | None = None


def read_training_document(path: str | os.PathLike[str]) -> tuple[Any, CaptureProblem | None] | None:
    """(the parsed JSON, None) or (None, the FATAL problem); None when there is no such file."""
    path = os.fspath(path)
    name = os.path.basename(path)
    try:
        with open(path, "rb") as handle:
            data = read_at_most(handle, MAX_TRAINING_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return None, CaptureProblem("FATAL", "unreadable", f"cannot read {name}: {exc.strerror or exc}")
    if len(data) > MAX_TRAINING_BYTES:
        return None, CaptureProblem("FATAL", "too_large", f"{name} is over {MAX_TRAINING_BYTES >> 20} MB: not read")
    try:
        return json.loads(data), None
    except (ValueError, RecursionError) as exc:
        return None, CaptureProblem("FATAL", "not_json", f"{name} is not JSON: {exc}")


@dataclass
class TrainingFile:
    """A loaded ``run.training.json``: the turns as the JSON holds them (dicts), and what was wrong."""

    schema_version: int
    turns: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)


def _turn_problem(turn: object, index: int) -> str | None:
    if not isinstance(turn, dict):
        return f"turn {index} is not an object"
    missing = [name for name in _REQUIRED if name not in turn]
    if missing:
        return f"turn {index} has no {', '.join(missing)}"
    prompt, completion = turn["prompt_token_ids"], turn["completion_token_ids"]
    logps, mask = turn["per_token_logps"], turn["loss_mask"]
    if not all(isinstance(ids, list) and all(type(t) is int and t >= 0 for t in ids) for ids in (prompt, completion)):
        return f"turn {index}: token ids must be lists of non-negative integers"
    if not isinstance(logps, list) or not all(type(v) in (int, float) and math.isfinite(v) and v <= 0 for v in logps):
        return f"turn {index}: per_token_logps must be finite numbers ≤ 0"
    if len(logps) != len(completion):
        return f"turn {index}: {len(logps)} logprobs for {len(completion)} completion tokens"
    if not isinstance(mask, list) or len(mask) != len(prompt) + len(completion) or any(bit not in (0, 1) or type(bit) is not int for bit in mask):
        return f"turn {index}: loss_mask must hold one 0/1 per prompt and completion token"
    if any(mask[: len(prompt)]):
        return f"turn {index}: prompt tokens must stay context (loss_mask 0)"
    return None


def load_training_trace(path: str | os.PathLike[str], problems: list[str] | None = None) -> TrainingFile | None:
    """Read a ``run.training.json``; None when it is absent or unusable (the reason in ``problems``).

    A turn that breaks ``TrainingTrace``'s rules is left out and named in ``TrainingFile.problems``."""
    path = Path(path)
    notes: list[str] = []
    loaded = None
    read = read_training_document(path)
    if read is None:
        return None
    document, broken = read
    if broken is not None:
        notes.append(broken.detail)
    else:
        loaded = _from_json(document, notes)
    if problems is not None:
        problems.extend(note if note.startswith(path.name) else f"{path.name}: {note}" for note in notes)
    return loaded


def _from_json(document: object, notes: list[str]) -> TrainingFile | None:
    if not isinstance(document, dict) or not isinstance(document.get("turns"), list):
        notes.append("it is not a TrainingTrace (an object with a turns list)")
        return None
    if document.get("schema_version") != 1:
        notes.append(f"schema_version {document.get('schema_version')!r} is not 1, the only one this reads")
        return None
    result = TrainingFile(schema_version=1, turns=[])
    seen: set[str] = set()
    for index, turn in enumerate(document["turns"]):
        problem = _turn_problem(turn, index)
        if problem is None and turn["node_id"] in seen:
            problem = f"turn {index}: node_id {turn['node_id']!r} repeats an earlier turn's"
        if problem is not None:
            result.problems.append(problem)
            continue
        seen.add(turn["node_id"])
        for part in ("request", "response", "metadata"):
            if not isinstance(turn.get(part), dict):
                turn[part] = {}
        result.turns.append(turn)
    return result
