"""The training trace beside an episode (``run.training.json``), read for the viewer's Training tab.

The file is openenv's ``TrainingTrace`` as JSON (``schema_version`` 1, ``turns`` of
``TrainingTurn``: ``prompt_token_ids``, ``completion_token_ids``, ``per_token_logps``,
``loss_mask`` over prompt + completion, ``request``/``response`` summaries, ``metadata``). Each
turn is one model call. This module summarises every turn without trusting the file (any field
may be missing or of the wrong type); reading and openenv's validation are the core's
(:mod:`smoldata_tui.training.validation`, which ``check`` uses too). openenv takes seconds to
import: the viewer calls :func:`load_training` on a worker thread.

How a turn links to the timeline: as the ledger matched it (:func:`ledger_links`,
:mod:`smoldata_tui.training.ledger`) when the stream could be read. The ledger leaves out a turn
that breaks ``TrainingTrace``'s rules, so its turns are found by node id
(:meth:`TrainingView.ledger_index`), never by position. A turn without a ledger turn is linked by
:func:`link_turns`: a turn's response names the tool calls it made (``choices[0].message.tool_calls[].id``); OpenCode keeps those ids as the ``callID`` of
its ``tool_use`` events, so the turn's step is the step of those rows. An id names the first rows
of that id that no earlier turn took (some models number their calls ``call_0`` in every turn, so
one id names a row of each step). A turn without tool calls
(the final answer, or a call whose ids match no row) takes the step after the previous turn's,
the first turn step 1: step k of the trace is model call k when every call is a step. A turn
placed by order is given the step's tool rows that no turn names by id.

When the file is not there, :func:`missing_training` says why from ``run.meta.json``'s capture
record: capture off, failed, not started, the endpoint without token ids, nothing saved.

No Textual here.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldata_tui.store.metadata import effective_status, metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace.finding import Severity
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.training.ledger import Ledger, build_ledger
from smoldata_tui.training.rollout_graph import GraphNode, gutter, root_count
from smoldata_tui.training.trace_file import CaptureProblem, read_training_document, training_path_for
from smoldata_tui.training.validation import as_dict, as_list, document_problems, first_choice

__all__ = ["CaptureProblem", "NO_TRAINING", "NO_TRAINING_BESIDE", "ToolCall", "ToolUseRow", "TrainingView", "TurnLink", "TurnSummary",
           "link_turns", "load_training", "missing_training", "tool_use_call_id", "training_path_for", "turn_of_event"]

NO_TRAINING = "no training trace: recorded without capture"
NO_TRAINING_BESIDE = "no training trace beside this trace"
NO_TOKEN_IDS = "captured, but the endpoint returned no token ids: nothing training can use"
_UNSET = object()
SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens", "seed",
                 "presence_penalty", "frequency_penalty", "repetition_penalty", "logprobs", "top_logprobs",
                 "return_token_ids", "enable_thinking")  # fmt: skip


@dataclass(frozen=True)
class ToolCall:
    call_id: str | None
    name: str | None


@dataclass
class TurnSummary:
    index: int  # 0-based position in the file; shown 1-based
    node_id: str
    prompt_tokens: int
    completion_tokens: int
    mean_logprob: float | None
    min_logprob: float | None
    trained_tokens: int  # completion positions with mask 1
    finish_reason: str | None
    requested: dict[str, Any]
    applied: dict[str, Any]
    tool_calls: list[ToolCall]
    native_tool_calls: Any = _UNSET  # the environment's verdict, as set on every turn; _UNSET: absent

    @property
    def mask_coverage(self) -> float | None:
        return self.trained_tokens / self.completion_tokens if self.completion_tokens else None

    @property
    def has_verdict(self) -> bool:
        return self.native_tool_calls is not _UNSET


@dataclass
class TrainingView:
    path: Path
    turns: list[TurnSummary] = field(default_factory=list)
    problems: list[CaptureProblem] = field(default_factory=list)
    validated: bool = False  # False when openenv could not be imported to check the file
    ledger: Ledger | None = None  # the turns reconciled with the stream (training/ledger.py)
    # run.meta.json's capture.sampling: training's policy on the session, None when none was sent;
    # _UNSET when no capture record says (no run.meta.json, opencode_env's own proxy)
    policy: Any = _UNSET
    _ledger_of: list[int | None] | None = field(default=None, repr=False)  # file turn -> ledger turn

    def ledger_index(self, turn: int) -> int | None:
        """Where the ledger (and its rollout graph) has turn ``turn`` of the file; None when it left it out."""
        positions = self._ledger_positions()
        return positions[turn] if 0 <= turn < len(positions) else None

    def turn_of_ledger(self, index: int) -> int:
        """The file's turn (0-based) of the ledger's turn ``index``."""
        positions = self._ledger_positions()
        return positions.index(index) if index in positions else index

    def _ledger_positions(self) -> list[int | None]:
        if self.ledger is None:
            return []
        if self._ledger_of is None:
            where = {ledger_turn.node_id: ledger_turn.index for ledger_turn in self.ledger.turns}
            seen: set[str] = set()
            self._ledger_of = []
            for summary in self.turns:  # a repeated node id: the ledger kept only the first
                self._ledger_of.append(None if summary.node_id in seen else where.get(summary.node_id))
                seen.add(summary.node_id)
        return self._ledger_of

    def problems_of(self, turn: int) -> list[CaptureProblem]:
        return [problem for problem in self.problems if problem.turn == turn]

    @property
    def fatal_count(self) -> int:
        return sum(problem.level == "FATAL" for problem in self.problems)


# ------------------------------------------------------------------------------------ reading


def load_training(path: str | os.PathLike[str], *, validate: bool = True,
                  trace_path: str | os.PathLike[str] | None = None) -> TrainingView | None:  # fmt: skip
    """The summary of the training trace at ``path``; None when there is no such file. With
    ``trace_path`` (the episode's stream) the view carries the ledger too."""
    path = Path(path)
    read = read_training_document(path)
    if read is None:
        return None
    document, broken = read
    if broken is not None:
        return TrainingView(path, problems=[broken])
    view = TrainingView(path)
    if not isinstance(document, dict) or not isinstance(document.get("turns"), list):
        view.problems, _ = document_problems(document)
        return view
    view.turns = [summarise_turn(index, turn) for index, turn in enumerate(document["turns"])]
    if validate:
        view.problems, view.validated = document_problems(document)
    if trace_path is not None:
        try:
            view.ledger = build_ledger(trace_path)
        except OSError:
            view.ledger = None
        metadata = load_metadata(metadata_path_for(trace_path))
        record = metadata.capture if metadata is not None and isinstance(metadata.capture, dict) else {}
        if record and record.get("enabled") is not False:
            view.policy = record.get("sampling") if isinstance(record.get("sampling"), dict) else None
    return view


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def summarise_turn(index: int, turn: object) -> TurnSummary:
    turn = as_dict(turn)
    prompt, completion = as_list(turn.get("prompt_token_ids")), as_list(turn.get("completion_token_ids"))
    logps = [number for number in map(_number, as_list(turn.get("per_token_logps"))) if number is not None]
    mask = as_list(turn.get("loss_mask"))
    metadata = as_dict(turn.get("metadata"))
    request, response = as_dict(turn.get("request")), as_dict(turn.get("response"))
    choice = first_choice(response)
    finish = choice.get("finish_reason")
    summary = TurnSummary(
        index=index,
        node_id=str(turn.get("node_id") or metadata.get("node_id") or f"#{index + 1}"),
        prompt_tokens=len(prompt),
        completion_tokens=len(completion),
        mean_logprob=sum(logps) / len(logps) if logps else None,
        min_logprob=min(logps) if logps else None,
        trained_tokens=sum(1 for bit in mask[len(prompt):] if bit == 1),
        finish_reason=finish if isinstance(finish, str) else None,
        requested=_sampling(metadata.get("requested_sampling_params"), request),
        applied=_sampling(metadata.get("sampling_params"), {}),
        tool_calls=_tool_calls(as_dict(choice.get("message"))),
    )
    if "native_tool_calls" in metadata:
        summary.native_tool_calls = metadata["native_tool_calls"]
    return summary


def _sampling(params: object, request: dict) -> dict[str, Any]:
    """Sampling knobs: the metadata's params, else what the request summary carries."""
    if isinstance(params, dict):
        return {str(key): value for key, value in params.items()}
    source = request
    kwargs = as_dict(source.get("chat_template_kwargs"))
    found = {key: source[key] for key in SAMPLING_KEYS if key in source}
    if "enable_thinking" in kwargs and "enable_thinking" not in found:
        found["enable_thinking"] = kwargs["enable_thinking"]
    return found


def _tool_calls(message: dict) -> list[ToolCall]:
    calls = []
    for call in as_list(message.get("tool_calls")):
        call = as_dict(call)
        function = as_dict(call.get("function"))
        call_id, name = call.get("id"), function.get("name", call.get("name"))
        calls.append(ToolCall(call_id if isinstance(call_id, str) else None, name if isinstance(name, str) else None))
    return calls


# ------------------------------------------------------------------------------------ linking


@dataclass(frozen=True)
class ToolUseRow:
    event: int
    step: int
    call_id: str | None


@dataclass(frozen=True)
class TurnLink:
    step: int | None  # None: the trace has no such step
    events: tuple[int, ...]  # the tool_use rows this turn produced
    how: str  # "callID", "order" or "none"


def link_turns(turns: list[TurnSummary], rows: list[ToolUseRow], steps: set[int]) -> list[TurnLink]:
    """Each turn's step and tool_use rows (rule in the module docstring)."""
    claimed = {call.call_id for turn in turns for call in turn.tool_calls if call.call_id}
    by_id: dict[str, list[ToolUseRow]] = {}
    by_step: dict[int, list[int]] = {}  # rows no turn names by id: the turn placed by order made them
    for row in rows:
        if row.call_id in claimed:
            by_id.setdefault(row.call_id, []).append(row)
        else:
            by_step.setdefault(row.step, []).append(row.event)
    links: list[TurnLink] = []
    previous = 0
    taken: set[int] = set()  # rows an earlier turn produced
    for turn in turns:
        matched = sorted({row.event: row for call in turn.tool_calls
                          for row in _rows_of_call(by_id.get(call.call_id or "", []), taken, previous)}.items())  # fmt: skip
        if matched:
            taken.update(event for event, _ in matched)
            step = matched[0][1].step
            links.append(TurnLink(step, tuple(event for event, _ in matched), "callID"))
        else:
            step = previous + 1
            if step in steps:
                links.append(TurnLink(step, tuple(by_step.get(step, ())), "order"))
            else:
                links.append(TurnLink(None, (), "none"))
        previous = step
    return links


def _rows_of_call(rows: list[ToolUseRow], taken: set[int], previous: int) -> list[ToolUseRow]:
    """The rows of one call id that this turn made: of the rows no earlier turn took (preferring
    those not before the previous turn's step), the first one's step's rows."""
    free = [row for row in rows if row.event not in taken]
    ahead = [row for row in free if row.step >= previous] or free
    return [row for row in ahead if row.step == ahead[0].step] if ahead else []


def ledger_links(ledger: Ledger, rows: list[ToolUseRow], steps: set[int]) -> list[TurnLink]:
    """Each turn's step as the ledger matched it, with that step's tool rows its completion names
    (all the step's rows when it names none of them)."""
    links = []
    for turn in ledger.turns:
        if turn.step is None or turn.step not in steps:
            links.append(TurnLink(None, (), "none"))
            continue
        own = [row for row in rows if row.step == turn.step]
        named = tuple(row.event for row in own if row.call_id in turn.call_ids)
        links.append(TurnLink(turn.step, named or tuple(row.event for row in own), "callID" if named else "order"))
    return links


def turn_of_event(links: list[TurnLink], event: int, step: int) -> int | None:
    """The turn that produced ``event`` (a row of ``step``): by its tool_use row, else by step."""
    for index, link in enumerate(links):
        if event in link.events:
            return index
    for index, link in enumerate(links):
        if link.step == step and step > 0:
            return index
    return None


def tool_use_call_id(line: bytes) -> str | None:
    """The ``part.callID`` of a tool_use event's JSON line (None when it has none)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    part = event.get("part") if isinstance(event, dict) else None
    call_id = part.get("callID") if isinstance(part, dict) else None
    return call_id if isinstance(call_id, str) and call_id else None


# ------------------------------------------------------------------------------------ ledger

_MARK = {"ledger_unmatched_turn": "no step", "ledger_unreported_call": "unreported",
         "ledger_missing_turn": "missing", "ledger_rewritten_prompt": "rewritten"}  # fmt: skip


def ledger_mark(view: TrainingView, turn: int) -> tuple[str, str]:
    """(the Training tab's ledger cell for ``turn``, its level: FATAL, WARN, INFO or "")."""
    index = view.ledger_index(turn)
    if index is None:
        return "-", ""
    findings = view.ledger.turns[index].findings
    if not findings:
        return "ok", ""
    worst = min(findings, key=lambda finding: list(Severity).index(finding.severity))
    level = {Severity.ERROR: "FATAL", Severity.WARNING: "WARN"}.get(worst.severity, "INFO")
    return " ".join(dict.fromkeys(_MARK.get(finding.kind, finding.kind) for finding in findings)), level


def graph_cell(view: TrainingView, turn: int) -> str:
    """The rollout graph's gutter for ``turn``: conversation letter, shape, × when training learns nothing."""
    index = view.ledger_index(turn)
    if index is None or index >= len(view.ledger.graph):
        return ""
    return gutter(view.ledger.graph, index) + ("×" if view.ledger.graph[index].excluded else " ")


def graph_note(view: TrainingView, turn: int) -> str:
    """Where ``turn`` sits in the rollout graph, and why a root beyond the first is one."""
    ledger, index = view.ledger, view.ledger_index(turn)
    if index is None or index >= len(ledger.graph):
        return ""
    node: GraphNode = ledger.graph[index]
    letter = chr(ord("A") + node.root % 26)
    lines = []
    if node.parent is not None:
        lines.append(f"conversation {letter}: extends turn {view.turn_of_ledger(node.parent) + 1}'s prompt and completion")
    elif node.root == 0:
        lines.append(f"conversation {letter}: its root (the first call)")
    else:
        why = ("a call no step of the stream came from" if ledger.turns[index].step is None
               else "the agent's call, with its context rewritten, compacted or re-rendered")  # fmt: skip
        lines.append(f"conversation {letter} starts here: its prompt extends no earlier turn ({why}); openenv's "
                     f"validation reports such roots as multiple_roots ({root_count(ledger.graph)} among these turns)")  # fmt: skip
    if node.children > 1:
        lines.append(f"{node.children} later turns extend it: a fork (retries or resamples)")
    if node.excluded:
        lines.append("excluded from training: no completion token has loss_mask 1")
    if node.skipped_before:
        lines.append(f"{node.skipped_before} capture call(s) before it are not in the file "
                     "(auxiliary calls without tools, or discarded retries)")  # fmt: skip
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ no file


def missing_training(trace_path: str | os.PathLike[str]) -> tuple[str, str]:
    """(what happened, a detail) when no ``run.training.json`` is beside ``trace_path``, as
    ``run.meta.json``'s capture record tells it: "recorded without capture" only when capture was off."""
    metadata = load_metadata(metadata_path_for(trace_path))
    if metadata is None:
        return NO_TRAINING_BESIDE, "no run.meta.json beside it says whether the episode was captured"
    record = metadata.capture if isinstance(metadata.capture, dict) else {}

    def said(value: object, limit: int = 300) -> str | None:
        return clip(neutralize(value, keep_newlines=False), limit) if isinstance(value, str) and value else None

    if not record:  # opencode_env's own proxy, or an episode saved before the capture existed
        return NO_TRAINING_BESIDE, "run.meta.json has no capture record"
    if record.get("enabled") is False:
        return NO_TRAINING, "capture was off (--no-capture): OpenCode talked straight to the endpoint"
    if said(record.get("failed")):
        return f"capture failed: {said(record.get('failed'))}", "the episode ended in the capture proxy stage"
    if effective_status(metadata) == "running":
        return "no training trace yet: the episode is running", "the capture writes run.training.json when it ends"
    if record.get("started") is False:
        return "no training trace: the episode ended before the capture proxy started", ""
    level, why = said(record.get("level"), 40), said(record.get("not_trainable_because"))
    if level and level != "tokens":
        probe = record.get("probe_findings")
        noticed = [said(item, 200) for item in (probe if isinstance(probe, list) else [])[:1] if said(item)]
        return f"{NO_TOKEN_IDS} (openenv: {'; '.join([f'capture level {level}', *noticed])})", why or ""
    if said(record.get("training_trace")):
        return f"the capture saved {said(record.get('training_trace'), 80)}, but it is no longer beside the trace", ""
    if why:
        return f"captured, but no training trace was saved: {why}", ""
    return NO_TRAINING_BESIDE, "capture was on; run.meta.json does not say why nothing was saved"
