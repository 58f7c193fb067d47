"""The training package's files and rules without a live episode: the token-id dialect, reading
``run.training.json``, saving it with the seed's native_tool_calls, and the configuration findings
computed from an episode's sidecars."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.replay.token_dialect import add_token_fields, completion_ids, prompt_ids
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.trace.seed_rule import seed_outcome
from smoldata_tui.training import load_training_trace
from smoldata_tui.fleet.work import analyze_trace
from smoldata_tui.training.config_findings import sidecar_findings
from smoldata_tui.training.requests import request_summary

from .conftest import SAMPLES, run_cli

# what OpenCode 1.18.31 offers with the environment's configuration (else an offered_tools_drift finding)
OFFERED_BY_1_18_31 = ("bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write")
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {}}} for name in OFFERED_BY_1_18_31]


def _completion(message: dict) -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


def test_token_dialect_aligns_ids_and_logprobs_and_extends_the_prompt():
    first = {"messages": [{"role": "user", "content": "list files"}], "tools": TOOLS, "logprobs": True, "return_token_ids": True}
    answer = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}  # fmt: skip
    body = add_token_fields(_completion(answer), first)
    choice = body["choices"][0]
    assert body["prompt_token_ids"] == prompt_ids(first) and choice["token_ids"] == completion_ids(answer)
    entries = choice["logprobs"]["content"]
    assert [e["token"] for e in entries] == [f"token_id:{t}" for t in choice["token_ids"]]
    assert all(-1.1 < e["logprob"] < 0 for e in entries)
    # The next turn's prompt starts with this turn's prompt and completion, as an engine's would.
    second = {**first, "messages": [*first["messages"], answer, {"role": "tool", "tool_call_id": "c1", "content": "a.csv"}]}
    head = body["prompt_token_ids"] + choice["token_ids"]
    assert prompt_ids(second)[: len(head)] == head and len(prompt_ids(second)) > len(head)
    # Asked for nothing, or an endpoint that returns less: the fields are absent.
    assert "prompt_token_ids" not in add_token_fields(_completion(answer), {"messages": []})
    less = add_token_fields(_completion(answer), first, "logprobs")
    assert "prompt_token_ids" not in less and "token_ids" not in less["choices"][0]
    assert not less["choices"][0]["logprobs"]["content"][0]["token"].startswith("token_id:")
    assert "logprobs" not in add_token_fields(_completion(answer), first, "text")["choices"][0]


def _turn(node_id: str, prompt: int = 3, completion: int = 2) -> dict:
    return {
        "node_id": node_id, "prompt_token_ids": list(range(prompt)), "completion_token_ids": list(range(completion)),
        "per_token_logps": [-0.5] * completion, "loss_mask": [0] * prompt + [1] * completion,
        "request": {"messages": []}, "response": {}, "metadata": {"native_tool_calls": 3},
    }  # fmt: skip


def test_loading_a_training_trace_keeps_good_turns_and_names_bad_ones(tmp_path):
    bad = _turn("b")
    bad["per_token_logps"] = [-0.5]  # one logprob for two tokens
    path = tmp_path / "run.training.json"
    path.write_text(json.dumps({"schema_version": 1, "turns": [_turn("a"), bad, _turn("a")]}))
    loaded = load_training_trace(path)
    assert [turn["node_id"] for turn in loaded.turns] == ["a"]
    assert loaded.problems == ["turn 1: 1 logprobs for 2 completion tokens", "turn 2: node_id 'a' repeats an earlier turn's"]
    problems: list[str] = []
    path.write_text(json.dumps({"schema_version": 2, "turns": []}))
    assert load_training_trace(path, problems) is None and "schema_version 2" in problems[0]
    path.write_text("{not json")
    assert load_training_trace(path, problems) is None and "not JSON" in problems[-1]
    assert load_training_trace(tmp_path / "absent.training.json") is None


@pytest.mark.parametrize("sample", ["clean_pass.jsonl", "duplicate_call_id_reused.jsonl", "wrapper_crash_state_null.jsonl"])
def test_saved_training_trace_carries_the_seeds_verdict_and_no_secret(tmp_path, sample):
    from openenv.core.harness.training import TrainingTrace

    from smoldata_tui.training.trace_file import save_training_trace

    trace_path = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / sample, trace_path)
    secret = "sk-session-abcdef0123456789"
    turn = _turn("n1")
    turn["request"] = {"messages": [{"role": "tool", "content": f"key={secret}"}]}
    saved = save_training_trace(TrainingTrace.model_validate({"turns": [turn, _turn("n2")]}), trace_path,
                                scrub=lambda text: text.replace(secret, "*" * len(secret)))  # fmt: skip
    text = saved.read_text()
    trace = TrainingTrace.model_validate_json(text)
    seed = seed_outcome(trace_path.read_bytes())
    expected = None if seed.crash else seed.calls
    assert [t.metadata["native_tool_calls"] for t in trace.turns] == [expected, expected]
    assert expected == {"clean_pass.jsonl": 3}.get(sample)
    assert secret not in text and saved.name == "run.training.json"


def _episode(tmp_path: Path, *, config: dict, requests: list[dict] | None, capture: dict, seen: str = "1.18.31") -> Path:
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("ls", "a.csv\n")
    builder.step_finish("tool-calls")
    trace = tmp_path / "run.jsonl"
    data = builder.dumps()
    webfetch = json.loads(data.splitlines()[1])
    webfetch["part"].update(tool="webfetch", callID="call_web")
    trace.write_bytes(data + json.dumps(webfetch).encode() + b"\n")
    save_metadata(tmp_path / "run.meta.json", EpisodeMetadata(config=config, capture=capture, opencode_version="1.18.31",
                                                             sandbox={"opencode_version": seen}))  # fmt: skip
    if requests is not None:
        (tmp_path / "run.requests.jsonl").write_text("".join(json.dumps(request_summary(r)) + "\n" for r in requests))
    return trace


CONFIG = {"provider": {"intercepted": {}}, "tools": {"webfetch": False, "question": False, "task": False},
          "permission": {"*": "allow"}}  # fmt: skip


def test_config_findings_from_the_sidecars(tmp_path):
    policy = {"max_tokens": 4096, "chat_template_kwargs": {"enable_thinking": False}, "messages": []}
    trace = _episode(tmp_path, config=CONFIG, capture={"enabled": True},
                     requests=[{**policy, "tools": []}, {**policy, "tools": TOOLS}, {"max_tokens": 32000, "tools": TOOLS}])  # fmt: skip
    found = {f.kind: f for f in sidecar_findings(trace)}
    assert set(found) == {"disabled_tool_offered", "disabled_tool_called", "output_cap_missing", "thinking_enabled"}
    offered = found["disabled_tool_offered"].message
    assert "task, webfetch" in offered and "first in request 2" in offered and '"permission"' in offered
    assert found["disabled_tool_called"].line == 4 and "webfetch" in found["disabled_tool_called"].message
    assert "request 3 asked for max_tokens 32000" in found["output_cap_missing"].message
    assert found["thinking_enabled"].line is None and "first request 3" in found["thinking_enabled"].message
    # check --json carries them, with null line/event where a finding is about the configuration.
    report = json.loads(run_cli("check", "--json", str(trace)).stdout)
    kinds = {f["kind"]: f for f in report["findings"]}
    assert kinds["disabled_tool_offered"]["line"] is None and kinds["disabled_tool_offered"]["event"] is None
    assert kinds["disabled_tool_called"]["line"] == 4


def test_no_requests_file_a_version_mismatch_and_a_trace_without_sidecars(tmp_path):
    trace = _episode(tmp_path, config=CONFIG, capture={"enabled": False}, requests=None, seen="1.17.0")
    kinds = sorted(f.kind for f in sidecar_findings(trace))
    assert kinds == ["disabled_tool_called", "opencode_version_mismatch", "output_cap_missing", "thinking_enabled"]
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(SAMPLES / "clean_pass.jsonl", lone / "run.jsonl")
    assert sidecar_findings(lone / "run.jsonl") == []


def test_check_finds_a_disabled_call_without_reading_the_trace_twice_and_misses_none(tmp_path):
    # check and the fleet take the tools called from the analysis, and read the trace again only
    # when a disabled one is among them or a line was not read as one event: the findings are the
    # ones a second reading gives.
    def kinds_both_ways(trace):
        fleet = sorted((f.kind, f.line) for f in analyze_trace(str(trace))[0].findings if f.kind.startswith("disabled"))
        alone = sorted((f.kind, f.line) for f in sidecar_findings(trace) if f.kind.startswith("disabled"))
        return fleet, alone

    trace = _episode(tmp_path, config=CONFIG, capture={"enabled": True}, requests=None)
    fleet, alone = kinds_both_ways(trace)
    assert fleet == alone == [("disabled_tool_called", 4)]
    # No disabled tool called: nothing either way.
    lines = trace.read_bytes().splitlines(keepends=True)
    trace.write_bytes(b"".join(lines[:3]))
    assert kinds_both_ways(trace) == ([], [])
    # The webfetch call on a line nested too deep for the wrapper's json.loads (orjson reads it):
    # the analysis counts no call there, so the trace is read again and the call is found.
    webfetch = json.loads(lines[3])
    webfetch["part"]["state"]["input"] = {"url": "x"}
    deep = json.dumps(webfetch).encode().replace(b'"x"', b"[" * 1000 + b"]" * 1000)
    trace.write_bytes(b"".join(lines[:3]) + deep + b"\n")
    fleet, alone = kinds_both_ways(trace)
    assert fleet == alone == [("disabled_tool_called", 4)]


def test_an_opencode_env_episode_is_judged_from_its_proxy_trace_and_its_config(tmp_path):
    trace = _episode(tmp_path, config={"disabled_tools": ["webfetch", "question", "task"], "proxy_max_tokens_cap": 16384,
                                       "proxy_disable_thinking": True, "extra_opencode_json": {"permission": {"*": "allow"}}},
                     capture={}, requests=None)  # fmt: skip
    metadata = json.loads((tmp_path / "run.meta.json").read_text())
    metadata.update(harness="opencode-env")
    (tmp_path / "run.meta.json").write_text(json.dumps(metadata))
    assert sorted(f.kind for f in sidecar_findings(trace)) == ["disabled_tool_called", "output_cap_missing"]
    # With its proxy trace, the requests it forwarded are the evidence.
    metadata.update(proxy_trace="run.proxy.jsonl")
    (tmp_path / "run.meta.json").write_text(json.dumps(metadata))
    forwarded = {"max_tokens": 4096, "chat_template_kwargs": {"enable_thinking": False}, "tools": TOOLS, "messages": []}
    (tmp_path / "run.proxy.jsonl").write_text(json.dumps({"turn": 1, "request": forwarded}) + "\n")
    found = {f.kind: f.message for f in sidecar_findings(trace)}
    assert sorted(found) == ["disabled_tool_called", "disabled_tool_offered"]
    assert "task, webfetch" in found["disabled_tool_offered"] and '"permission"' in found["disabled_tool_offered"]


def test_the_capture_proxy_applies_training_policy_to_what_reaches_the_model(tmp_path):
    import urllib.request

    from smoldata_tui.replay.script import ReplayScript
    from smoldata_tui.replay.server import ReplayServer
    from smoldata_tui.training.capture import ModelCapture

    model = "acme-labs/coder-7b"  # not a Qwen3.5 name: openenv alone would leave thinking on
    script = ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl")
    with ReplayServer(script, model=model, record_requests=True) as server:
        capture = ModelCapture(llm_url=server.base_url, model=model, api_key="sk-upstream-key-0123456789",
                               requests_path=tmp_path / "run.requests.jsonl")  # fmt: skip
        said: list[str] = []
        capture.start(said.append)
        try:
            body = {"model": "coder-7b", "max_tokens": 32000, "stream": False, "tools": TOOLS,
                    "messages": [{"role": "user", "content": "go"}]}  # fmt: skip
            request = urllib.request.Request(f"{capture.base_url}/chat/completions", data=json.dumps(body).encode(),
                                             headers={"Authorization": f"Bearer {capture.session_id}",
                                                      "Content-Type": "application/json"})  # fmt: skip
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read())
        finally:
            capture.stop()
    reached = [r for r in server.requests if r["tools"]]
    assert len(reached) == 1
    assert reached[0] | {"messages": 1} == {
        "model": model, "max_tokens": 4096, "max_completion_tokens": None, "enable_thinking": False, "logprobs": True,
        "return_token_ids": True, "top_logprobs": 0, "temperature": None, "stream": False,
        "tools": list(OFFERED_BY_1_18_31), "messages": 1,
    }  # fmt: skip
    assert [json.loads(line) for line in (tmp_path / "run.requests.jsonl").read_text().splitlines()][-1] == reached[0]
    assert answer["choices"][0]["message"]["tool_calls"] and capture.record.level == "tokens"
    assert any("capture level tokens: trainable" in line for line in said)


def test_check_and_the_fleet_report_the_capture_validation_of_the_training_trace_beside_a_trace(tmp_path):
    """openenv's own checks on run.training.json (the Training tab's findings) are check findings too."""
    from smoldata_tui.fleet.work import analyze_trace

    from .training_fixture import training_trace_for, write_training

    trace = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "clean_pass.jsonl", trace)
    path = write_training(trace, training_trace_for(trace))
    report, _ = analyze_trace(str(trace))
    assert [f for f in report.findings if f.kind == "capture_validation"] == []  # a clean capture: nothing said
    document = json.loads(path.read_text())
    document["turns"][1]["per_token_logps"].pop()  # one logprob short
    document["turns"][3]["response"]["choices"][0]["finish_reason"] = "length"  # cut off by the cap
    path.write_text(json.dumps(document))
    checked = json.loads(run_cli("check", "--json", str(trace)).stdout)
    found = [f for f in checked["findings"] if f["kind"] == "capture_validation"]
    assert [(f["severity"], f["line"], f["event"]) for f in found] == [("error", None, None), ("warning", None, None)], found
    assert found[0]["message"].startswith("run.training.json turn 2: [FATAL] schema") and "logprob" in found[0]["message"]
    assert found[1]["message"].startswith("run.training.json turn 4: [WARN] truncated_turn")
    path.write_text("{not json")
    report, _ = analyze_trace(str(trace))
    assert [(f.kind, f.severity.value) for f in report.findings if f.kind == "capture_validation"] == [("capture_validation", "error")]
