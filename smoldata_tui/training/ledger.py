"""The training ledger: what the trainer receives (``run.training.json``, ``run.requests.jsonl``),
reconciled call by call with what the agent did (OpenCode's event stream).

Each captured turn is matched to the step it produced, in order: a step with tool calls takes the
next turn whose completion names one of its ``tool_use`` callIDs; a step with text only takes the
next turn without tool calls whose text is the step's, else the very next turn if it has no tool
calls; a step with neither (its events were dropped) takes the very next turn if no ``tool_use``
of the stream names that turn's calls. Turns passed
over are calls that produced no step. Then each tool call of a matched turn is looked up among the
stream's ``tool_use`` events by id, and back. Findings (``ledger_*``):

* ``ledger_unmatched_turn``: a turn no step came from. With tools offered it is not OpenCode's title
  or summary request: error, a call of unknown origin (an agent posting to the capture proxy itself
  forges such turns); a warning when it arrived while a ``task`` call ran (a subagent's call: the
  stream shows the parent session only); info when the turn offered no tools (an auxiliary call). Requests without
  tools in ``run.requests.jsonl`` are OpenCode's own title or summary requests, which openenv keeps
  out of the file: counted (:attr:`Ledger.side_requests`), not a finding, so an honest run has none.
* ``ledger_missing_turn``: a step, or a tool call of the stream, with no captured call (warning).
* ``ledger_unreported_call``: a tool call in a captured completion that the stream never reported
  (error: the seed's verdict counts the stream's calls, training trains on the completion's); a
  warning when ``opencode export`` recovered it after the episode was stopped (the third source:
  ``run.meta.json``'s ``recovered_calls``).
* ``ledger_rewritten_prompt``: an agent turn whose prompt does not extend the previous agent turn's
  prompt + completion (warning: the context was rewritten or compacted, or the harness re-rendered
  the earlier call differently from the tokens sampled; a new training sequence).

Pure (no Textual, no openenv); reads the files beside the trace, each size-capped by its reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from smoldata_tui.store.metadata import REQUESTS_SUFFIX, TRAINING_SUFFIX, EpisodeMetadata, sibling_path
from smoldata_tui.trace import analyze_path
from smoldata_tui.trace.finding import Finding, Severity
from smoldata_tui.trace.text import clip, neutralize
from smoldata_tui.training.requests import read_requests
from smoldata_tui.training.rollout_graph import GraphNode, rollout_graph, shared_prefix
from smoldata_tui.training.trace_file import load_training_trace
from smoldata_tui.training.validation import as_dict, as_list, first_choice

UNMATCHED, MISSING, UNREPORTED, REWRITTEN = (
    "ledger_unmatched_turn", "ledger_missing_turn", "ledger_unreported_call", "ledger_rewritten_prompt")  # fmt: skip
_MAX_LINE = 1 << 20  # a tool_use or text line read back for its callID or text; a step's text kept


@dataclass
class StreamCall:
    call_id: str | None
    tool: str
    line: int
    event: int


@dataclass
class StreamStep:
    number: int  # 1-based, as the timeline counts steps
    line: int
    event: int
    calls: list[StreamCall] = field(default_factory=list)
    text: str = ""
    turn: int | None = None  # the matched turn (0-based)


@dataclass
class LedgerTurn:
    index: int
    node_id: str
    call_ids: list[str]
    tools_offered: bool
    text: str
    step: int | None = None  # the matched step's number
    findings: list[Finding] = field(default_factory=list)  # the ledger's findings that name this turn

    @property
    def marks(self) -> list[str]:
        return [finding.kind for finding in self.findings]


@dataclass
class Ledger:
    steps: list[StreamStep]
    turns: list[LedgerTurn]
    graph: list[GraphNode]
    findings: list[Finding]
    side_requests: int = 0  # requests without tools: OpenCode's title or summary requests


def _short(text: object, limit: int = 48) -> str:
    return neutralize(clip(str(text), limit), keep_newlines=False)


def read_stream_steps(trace_path: str | os.PathLike[str]) -> list[StreamStep]:
    """The stream's steps with their tool_use calls (callID, tool, line, row) and text."""
    _, analysis = analyze_path(trace_path, keep_events=True)
    steps: dict[int, StreamStep] = {}
    with open(trace_path, "rb") as handle:
        for record in analysis.events or []:
            if record.step <= 0:
                continue
            step = steps.setdefault(record.step, StreamStep(record.step, record.line, record.index))
            if record.kind not in ("tool_use", "text") or record.length > _MAX_LINE:
                continue
            handle.seek(record.offset)
            try:
                part = as_dict(as_dict(json.loads(handle.read(record.length))).get("part"))
            except (ValueError, RecursionError):
                continue
            if record.kind == "tool_use":
                call_id = part.get("callID")
                step.calls.append(StreamCall(call_id if isinstance(call_id, str) else None, str(part.get("tool") or "?"),
                                             record.line, record.index))  # fmt: skip
            elif isinstance(part.get("text"), str) and len(step.text) < _MAX_LINE:
                step.text = (step.text + part["text"])[:_MAX_LINE]
    return [steps[number] for number in sorted(steps)]


def _ledger_turn(index: int, turn: dict) -> LedgerTurn:
    message = as_dict(first_choice(turn.get("response")).get("message"))
    ids = [as_dict(call).get("id") for call in as_list(message.get("tool_calls"))]
    content = message.get("content")
    return LedgerTurn(index, str(turn.get("node_id")), [call_id for call_id in ids if isinstance(call_id, str)],
                      bool(as_list(as_dict(turn.get("request")).get("tools"))), content if isinstance(content, str) else "")  # fmt: skip


def _same_text(step_text: str, turn_text: str) -> bool:
    step_text, turn_text = step_text.strip(), turn_text.strip()
    return bool(step_text) and bool(turn_text) and (step_text in turn_text or turn_text in step_text)


def match_steps(steps: list[StreamStep], turns: list[LedgerTurn]) -> None:
    """Set each step's turn and each turn's step (rule in the module docstring)."""
    reported = {call.call_id for step in steps for call in step.calls if call.call_id}
    cursor = 0
    for step in steps:
        ids = {call.call_id for call in step.calls if call.call_id}
        found = None
        for index in range(cursor, len(turns)):
            turn = turns[index]
            if ids and ids & set(turn.call_ids):
                found = index
            elif not ids and step.text and not turn.call_ids and _same_text(step.text, turn.text):
                found = index
            if found is not None:
                break
        if found is None and not ids and cursor < len(turns):
            following = turns[cursor]
            if (not following.call_ids) if step.text else not set(following.call_ids) & reported:
                found = cursor
        if found is not None:
            step.turn, turns[found].step = found, step.number
            cursor = found + 1


def _reconcile(steps: list[StreamStep], turns: list[LedgerTurn], graph: list[GraphNode], training: list[dict],
               recovered: set[str]) -> list[Finding]:  # fmt: skip
    found: list[Finding] = []

    def add(kind: str, severity: Severity, line: int | None, event: int | None, message: str, turn: LedgerTurn | None) -> None:
        found.append(Finding(kind, severity, line, event, message))
        if turn is not None:
            turn.findings.append(found[-1])

    by_number = {step.number: step for step in steps}
    last_call: StreamCall | None = None  # the call running when an unmatched turn arrived
    previous_agent: LedgerTurn | None = None
    for turn in turns:
        node = graph[turn.index]
        name = f"run.training.json turn {turn.index + 1} (node {_short(turn.node_id, 24)})"
        step = by_number.get(turn.step) if turn.step is not None else None
        if step is None:
            extends = "extends no earlier turn" if node.parent is None else f"extends turn {node.parent + 1}"
            if turn.tools_offered and last_call is not None and last_call.tool == "task":
                # OpenCode's run stream shows the parent session only: a subagent's calls have no steps there
                add(UNMATCHED, Severity.WARNING, last_call.line, last_call.event,
                    f"{name} arrived while the task call on line {last_call.line} ran and no step of the stream came "
                    f"from it: the subagent's call (its prompt {extends}), which the stream does not show; training "
                    "would learn from it as a conversation of its own", turn)  # fmt: skip
            elif turn.tools_offered:
                where = f" while the {_short(last_call.tool, 20)} call on line {last_call.line} ran" if last_call else ""
                add(UNMATCHED, Severity.ERROR, last_call.line if last_call else None, last_call.event if last_call else None,
                    f"{name} arrived at the capture proxy{where} but no step of the stream came from it: a model call "
                    f"of unknown origin, tools offered (so not OpenCode's title or summary request), its prompt "
                    f"{extends}. An agent that posts chat requests to the capture proxy forges such turns; "
                    f"training would learn from it as the agent's", turn)  # fmt: skip
            else:
                add(UNMATCHED, Severity.INFO, None, None, f"{name} produced no step and offered no tools: an "
                    "auxiliary call (OpenCode's title or summary request)", turn)  # fmt: skip
            continue
        if step.calls:
            last_call = step.calls[-1]
        reported = {call.call_id for call in step.calls}
        for call_id in turn.call_ids:
            if call_id in reported:
                continue
            if call_id in recovered:
                add(UNREPORTED, Severity.WARNING, step.line, step.event,
                    f"{name} called {_short(call_id)}, which the stream's step {step.number} never reported: the "
                    "episode was stopped while it ran, and only opencode export recovered it (run.meta.json "
                    "recovered_calls)", turn)  # fmt: skip
            else:
                add(UNREPORTED, Severity.ERROR, step.line, step.event,
                    f"{name} called {_short(call_id)} but the stream's step {step.number} never reported that tool "
                    "call, nor did opencode export: training trains on it, the seed's verdict does not count it", turn)  # fmt: skip
        for call in step.calls:
            if call.call_id not in turn.call_ids:
                add(MISSING, Severity.WARNING, call.line, call.event,
                    f"the {_short(call.tool, 20)} call {_short(call.call_id)} of step {step.number} is in no "
                    f"captured completion ({name} is that step's call)", turn)  # fmt: skip
        if previous_agent is not None and node.parent != previous_agent.index:
            shared, length = shared_prefix(training, previous_agent.index, turn.index)
            add(REWRITTEN, Severity.WARNING, step.line, step.event,
                f"{name}'s prompt does not extend turn {previous_agent.index + 1}'s prompt and completion (it "
                f"keeps the first {shared:,} of their {length:,} tokens): the context was rewritten, compacted or "
                "re-rendered differently from what was sampled, so training starts a new sequence here", turn)  # fmt: skip
        previous_agent = turn
    for step in steps:
        if step.turn is None:
            add(MISSING, Severity.WARNING, step.line, step.event,
                f"step {step.number} has no captured model call in run.training.json", None)  # fmt: skip
    return found


def side_request_count(trace_path: str) -> int:
    """Requests without tools in ``run.requests.jsonl``: OpenCode's own title or summary requests,
    which produce no step and which openenv leaves out of the training record (not a finding)."""
    requests = read_requests(sibling_path(trace_path, REQUESTS_SUFFIX)) or []
    return sum(1 for request in requests if not request.get("tools"))


def build_ledger(trace_path: str | os.PathLike[str], recovered_calls: Iterable[object] = ()) -> Ledger | None:
    """The ledger of the episode whose trace is ``trace_path``; None without a usable run.training.json.
    ``recovered_calls``: ``run.meta.json``'s calls ``opencode export`` recovered after a stop."""
    path = os.fspath(trace_path)
    training = load_training_trace(sibling_path(path, TRAINING_SUFFIX))
    if training is None or not training.turns:
        return None
    try:
        steps = read_stream_steps(path)
    except OSError:
        return None
    turns = [_ledger_turn(index, turn) for index, turn in enumerate(training.turns)]
    graph = rollout_graph(training.turns)
    match_steps(steps, turns)
    recovered = {call.get("callID") for call in recovered_calls if isinstance(call, dict)}
    return Ledger(steps, turns, graph, _reconcile(steps, turns, graph, training.turns, recovered), side_request_count(path))


def ledger_findings(trace_path: str | os.PathLike[str], metadata: EpisodeMetadata | None = None) -> list[Finding]:
    """The ledger's findings for ``trace_path`` (none without a training trace beside it)."""
    ledger = build_ledger(trace_path, metadata.recovered_calls if metadata is not None else ())
    return [] if ledger is None else ledger.findings
