"""What a trace looks like, as opposed to what it says: the event types it holds, every key path
of its events (``tool_use:part.state.metadata.exit``), the order of event types in each step, the
tools offered to the model (from ``run.requests.jsonl``), and digests of what the model was sent
(each tool's definition and each turn's messages, from ``run.training.json``). Two versions of
OpenCode replaying the same recording should give the same shape; :func:`shape_changes` says
where they do not.

Pure but for reading the files; no Textual.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

import orjson

from smoldata_tui.store.metadata import REQUESTS_SUFFIX, TRAINING_SUFFIX, sibling_path
from smoldata_tui.trace.reader import read_at_most
from smoldata_tui.trace.text import clip
from smoldata_tui.training.requests import read_requests
from smoldata_tui.training.trace_file import read_training_document

MAX_SHAPE_BYTES = 64 << 20  # a replayed episode's trace is kilobytes; this bounds a runaway one
MAX_FIELDS = 5000  # key paths kept per trace: an agent's tool input can carry any keys
MAX_DEPTH = 12
MAX_KEY_CHARS = 80


@dataclass
class TraceShape:
    event_types: set[str] = field(default_factory=set)
    fields: set[str] = field(default_factory=set)  # "type:dotted.key.path", lists as "name[]"
    step_orders: list[tuple[str, ...]] = field(default_factory=list)  # per step, its event types in order
    tools_offered: list[str] = field(default_factory=list)  # sorted union over requests with tools
    tool_schemas: dict[str, str] = field(default_factory=dict)  # tool name → digest of its definition (run.training.json)
    prompts: list[str] = field(default_factory=list)  # per training turn, a digest of the messages the model was sent
    requests_read: bool = False
    notes: list[str] = field(default_factory=list)


def _key_paths(value, prefix: str, into: set[str], depth: int = 0) -> None:
    if len(into) >= MAX_FIELDS or depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{prefix}.{clip(str(key), MAX_KEY_CHARS)}" if prefix else clip(str(key), MAX_KEY_CHARS)
            into.add(path)
            _key_paths(inner, path, into, depth + 1)
    elif isinstance(value, list):
        for inner in value:
            _key_paths(inner, f"{prefix}[]", into, depth + 1)


def _collapsed(types: list[str]) -> tuple[str, ...]:
    """``tool_use tool_use`` → ``tool_use×2``: a step's order, not its length."""
    out: list[str] = []
    for name in types:
        if out and out[-1].split("×")[0] == name:
            count = int(out[-1].split("×")[1]) + 1 if "×" in out[-1] else 2
            out[-1] = f"{name}×{count}"
        else:
            out.append(name)
    return tuple(out)


def read_shape(trace_path: str | os.PathLike[str]) -> TraceShape:
    """The shape of the trace at ``trace_path`` and of its ``run.requests.jsonl`` when present."""
    shape = TraceShape()
    try:
        with open(trace_path, "rb") as handle:
            data = read_at_most(handle, MAX_SHAPE_BYTES + 1)
    except OSError as exc:
        shape.notes.append(f"cannot read {trace_path}: {exc.strerror or exc}")
        return shape
    if len(data) > MAX_SHAPE_BYTES:
        shape.notes.append(f"only the first {MAX_SHAPE_BYTES >> 20} MB of the trace were read")
        data = data[:MAX_SHAPE_BYTES]
    steps: dict[str, list[str]] = {}
    for line in data.split(b"\n"):
        try:
            event = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            continue
        kind = clip(event["type"], MAX_KEY_CHARS)
        shape.event_types.add(kind)
        paths: set[str] = set()
        _key_paths(event, "", paths)
        for path in paths:
            if len(shape.fields) < MAX_FIELDS:
                shape.fields.add(f"{kind}:{path}")
        part = event.get("part")
        message = part.get("messageID") if isinstance(part, dict) else None
        if isinstance(message, str):
            steps.setdefault(message, []).append(kind)
    if len(shape.fields) >= MAX_FIELDS:
        shape.notes.append(f"only the first {MAX_FIELDS} key paths were kept")
    shape.step_orders = [_collapsed(types) for types in steps.values()]
    problems: list[str] = []
    requests = read_requests(sibling_path(os.fspath(trace_path), REQUESTS_SUFFIX), problems)
    shape.notes += problems
    if requests is not None:
        shape.requests_read = True
        shape.tools_offered = offered_tool_names(requests)
    _read_training_requests(os.fspath(trace_path), shape)
    return shape


def _digest(value) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _read_training_requests(trace_path: str, shape: TraceShape) -> None:
    """What the model was sent, as the capture kept it: each turn's messages and tool definitions.
    Digests only: the messages hold what the agent wrote."""
    read = read_training_document(sibling_path(trace_path, TRAINING_SUFFIX))
    if read is None or read[1] is not None or not isinstance(read[0], dict):
        return
    for turn in read[0].get("turns") or []:
        request = turn.get("request") if isinstance(turn, dict) else None
        if not isinstance(request, dict):
            continue
        try:
            shape.prompts.append(_digest(request.get("messages")))
            for tool in request.get("tools") or []:
                function = tool.get("function") if isinstance(tool, dict) else None
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    shape.tool_schemas[clip(function["name"], MAX_KEY_CHARS)] = _digest(function)
        except (TypeError, orjson.JSONEncodeError):
            continue  # a value orjson cannot encode (a 2^64 integer): not compared


def offered_tool_names(requests: list[dict]) -> list[str]:
    """Every tool name offered in any request (requests without tools, like the title's, add none)."""
    return sorted({name for request in requests for name in (request.get("tools") or []) if isinstance(name, str)})


# OpenCode writes a text or reasoning part when it settles, which races a tool call finishing: the
# same recording on 1.18.33 gave `text tool_use` for one step when recorded and `tool_use text`
# when replayed under load. Their place among a step's calls is timing, not a version's behaviour;
# their count is compared.
_PLACED_BY_TIMING = ("text", "reasoning")


def _comparable(order: tuple[str, ...]) -> tuple:
    settled = [name for name in order if name.split("×")[0] in _PLACED_BY_TIMING]
    return tuple(name for name in order if name.split("×")[0] not in _PLACED_BY_TIMING), sorted(settled)


def _order_changes(old: list[tuple[str, ...]], new: list[tuple[str, ...]]) -> list[str]:
    changes = [f"step {number}: {' '.join(a)} → {' '.join(b)}"
               for number, (a, b) in enumerate(zip(old, new), 1) if _comparable(a) != _comparable(b)]  # fmt: skip
    if len(old) != len(new):
        changes.append(f"steps: {len(old)} → {len(new)}")
    return changes


def shape_changes(old: TraceShape, new: TraceShape) -> dict[str, list[str]]:
    """What appeared in ``new`` and vanished from ``old``: event types, key paths, tools offered,
    and the steps whose event order differs."""
    return {
        "events_added": sorted(new.event_types - old.event_types),
        "events_removed": sorted(old.event_types - new.event_types),
        "fields_added": sorted(new.fields - old.fields),
        "fields_removed": sorted(old.fields - new.fields),
        "tools_offered_added": sorted(set(new.tools_offered) - set(old.tools_offered)),
        "tools_offered_removed": sorted(set(old.tools_offered) - set(new.tools_offered)),
        "order_changes": _order_changes(old.step_orders, new.step_orders),
        "tool_schemas_changed": sorted(name for name in old.tool_schemas.keys() & new.tool_schemas.keys()
                                       if old.tool_schemas[name] != new.tool_schemas[name]),  # fmt: skip
        "prompts_changed": _prompt_changes(old.prompts, new.prompts),
    }


def _prompt_changes(old: list[str], new: list[str]) -> list[str]:
    changes = [f"turn {number}" for number, (a, b) in enumerate(zip(old, new), 1) if a != b]
    if len(old) != len(new):
        changes.append(f"turns: {len(old)} → {len(new)}")
    return changes
