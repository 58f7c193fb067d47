"""Training traces for the viewer's tests, made with openenv's own ``TrainingTrace`` /
``TrainingTurn`` (so the file is exactly what openenv writes), shaped like the capture layer's
``to_trace_entries`` output: one turn per model call of a trace, the tool calls of each turn
carrying the callIDs OpenCode recorded, prompts growing by the previous turn's tokens."""

from __future__ import annotations

import json
import random
from pathlib import Path


def steps_of(trace: Path) -> list[list[tuple[str, str]]]:
    """Per step of an OpenCode trace: its tool calls as (callID, tool)."""
    steps: list[list[tuple[str, str]]] = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "step_start":
            steps.append([])
        elif event.get("type") == "tool_use" and steps:
            part = event["part"]
            steps[-1].append((part["callID"], part["tool"]))
    return steps


def training_trace_for(trace: Path, *, seed: int = 7, native_tool_calls: int | None = 3, model: str = "Qwen/Qwen3.5-4B",
                       masked_turns: frozenset[int] = frozenset()):  # fmt: skip
    """openenv's TrainingTrace for ``trace``: one turn per step (turns in ``masked_turns`` are context only)."""
    from openenv.core.harness.training import TrainingTrace, TrainingTurn

    rng = random.Random(seed)
    prompt: list[int] = [rng.randrange(100, 150_000) for _ in range(600)]
    turns = []
    for index, calls in enumerate(steps_of(trace)):
        completion = [rng.randrange(100, 150_000) for _ in range(rng.randrange(12, 90))]
        logps = [round(-abs(rng.gauss(0.0, 0.6 + 0.2 * index)), 4) for _ in completion]
        mask = [0] * len(prompt) + ([0] if index in masked_turns else [1]) * len(completion)
        tool_calls = [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}
                      for call_id, tool in calls]  # fmt: skip
        message = {"role": "assistant", "content": None if calls else "The top region is West.", "tool_calls": tool_calls}
        turns.append(TrainingTurn(
            node_id=f"n{index}",
            prompt_token_ids=list(prompt),
            completion_token_ids=completion,
            per_token_logps=logps,
            loss_mask=mask,
            request={"messages": [{"role": "user", "content": "Which region sold most?"}], "tools": [{"type": "function"}]},
            response={"choices": [{"message": message, "finish_reason": "tool_calls" if calls else "stop"}]},
            metadata={"node_id": f"n{index}", "index": index, "model": model, "n_tools": 9, "harness_session_id": None,
                      "sampling_params": {"temperature": 1.0, "top_p": 1.0},
                      "requested_sampling_params": {"temperature": 0.55, "top_p": 0.95},
                      "native_tool_calls": native_tool_calls},
        ))  # fmt: skip
        prompt = prompt + completion + [rng.randrange(100, 150_000) for _ in range(rng.randrange(20, 200))]
    return TrainingTrace(turns=turns)


def write_training(trace: Path, training) -> Path:
    path = trace.with_name(trace.stem + ".training.json")
    path.write_text(training.model_dump_json(), encoding="utf-8")
    return path
