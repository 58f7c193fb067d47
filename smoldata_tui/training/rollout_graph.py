"""The rollout graph of a saved capture, rebuilt from ``run.training.json``'s turns.

openenv's capture keeps a rollout graph (``openenv.core.harness.capture.graph``: a call's parent is
the call whose prompt + completion is a token prefix of its prompt; a call that extends nothing is
a root: a new conversation, a subagent, an auxiliary call or the continuation after a rewritten
context). The graph objects are not saved with the episode, so the relation is rebuilt here by the
same rule from the saved token ids. openenv already leaves auxiliary calls (no tools) and discarded
retries out of the file; their places show as gaps in the turns' ``metadata.index`` (the call's
arrival number in the capture session). Pure: no openenv, no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GraphNode:
    turn: int  # 0-based position in run.training.json
    parent: int | None  # the turn this one's prompt extends; None: a root
    root: int  # 0-based number of the conversation (root) it belongs to
    children: int
    excluded: bool  # training learns nothing from it: no completion token has loss_mask 1
    skipped_before: int  # capture calls left out of the file just before this turn (index gap)


def _ids(turn: dict[str, Any], key: str) -> list:
    value = turn.get(key)
    return value if isinstance(value, list) else []


def _arrival(turn: dict[str, Any]) -> int | None:
    metadata = turn.get("metadata")
    index = metadata.get("index") if isinstance(metadata, dict) else None
    return index if type(index) is int else None


def rollout_graph(turns: list[dict[str, Any]]) -> list[GraphNode]:
    """One node per turn: its parent (the closest earlier turn whose prompt + completion its prompt
    starts with), its root, and whether training would learn from it."""
    ends: list[list] = []
    parents: list[int | None] = []
    for turn in turns:
        prompt = _ids(turn, "prompt_token_ids")
        parent = None
        for earlier in range(len(ends) - 1, -1, -1):
            end = ends[earlier]
            # the last token first: a turn of another conversation fails there without copying the prefix
            if end and len(end) <= len(prompt) and prompt[len(end) - 1] == end[-1] and prompt[: len(end)] == end:
                parent = earlier
                break
        parents.append(parent)
        ends.append(prompt + _ids(turn, "completion_token_ids"))
    roots: list[int] = []
    children = [0] * len(turns)
    nodes = []
    previous_arrival = None
    for index, (turn, parent) in enumerate(zip(turns, parents)):
        if parent is None:
            root = len(set(roots))
        else:
            root = roots[parent]
            children[parent] += 1
        roots.append(root)
        prompt_length = len(_ids(turn, "prompt_token_ids"))
        trained = any(bit == 1 for bit in _ids(turn, "loss_mask")[prompt_length:])
        arrival = _arrival(turn)
        first = 0 if previous_arrival is None else previous_arrival + 1
        skipped = arrival - first if arrival is not None and arrival > first else 0
        previous_arrival = arrival if arrival is not None else previous_arrival
        nodes.append(GraphNode(index, parent, root, 0, not trained, skipped))
    return [GraphNode(n.turn, n.parent, n.root, children[n.turn], n.excluded, n.skipped_before) for n in nodes]


def shared_prefix(turns: list[dict[str, Any]], earlier: int, later: int) -> tuple[int, int]:
    """(tokens ``later``'s prompt shares with the start of ``earlier``'s prompt + completion, that length)."""
    end = _ids(turns[earlier], "prompt_token_ids") + _ids(turns[earlier], "completion_token_ids")
    prompt = _ids(turns[later], "prompt_token_ids")
    shared = 0
    for mine, theirs in zip(end, prompt):
        if mine != theirs:
            break
        shared += 1
    return shared, len(end)


def root_count(nodes: list[GraphNode]) -> int:
    return len({node.root for node in nodes})


def gutter(nodes: list[GraphNode], turn: int) -> str:
    """Two characters for ``turn``: its conversation's letter and its shape (● root, ├ fork, │ chain)."""
    node = nodes[turn]
    letter = chr(ord("A") + node.root % 26)
    if node.parent is None:
        shape = "●"
    elif nodes[node.parent].children > 1:
        shape = "├"
    else:
        shape = "│"
    return letter + shape
