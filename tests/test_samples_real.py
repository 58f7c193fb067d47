"""The traces recorded from the real OpenCode (sample_traces/real) say what their README says."""

from __future__ import annotations

import pytest

from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace import analyze_path

from .conftest import SAMPLES

REAL = SAMPLES / "real"
# name → (status, native_tool_calls, env_reward, recovered calls)
EXPECTED = {
    "passing_run": ("finished", 3, 1.0, 0),
    "failing_run": ("finished", 1, 0.0, 0),
    "tool_errors": ("finished", 4, 1.0, 0),
    "killed_mid_tool": ("cancelled", 1, None, 1),
    "timeout": ("timeout", 1, 0.0, 1),
    "opencode_env_run": ("finished", 3, 1.0, 0),
    "finish_length": ("finished", 1, 0.0, 0),
    "empty_response": ("finished", 1, 0.0, 0),
    "bash_timeout": ("finished", 1, 0.0, 0),
    "stream_dropped": ("timeout", 0, 0.0, 0),
    "export_document": ("finished", 3, 1.0, 0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_episode(name):
    status, calls, reward, recovered = EXPECTED[name]
    report, _ = analyze_path(REAL / f"{name}.jsonl")
    assert report.verdict.native_tool_calls == calls
    metadata = load_metadata(REAL / f"{name}.meta.json")
    assert metadata.status == status and metadata.opencode_version == "1.18.31"
    assert (metadata.grade.env_reward if metadata.grade else None) == reward
    assert len(metadata.recovered_calls) == recovered
    assert all(call["status"] == "running" for call in metadata.recovered_calls)
    assert f"`{name}.jsonl`" in (REAL / "README.md").read_text()
    kinds = {finding.kind for finding in report.findings}
    if name == "stream_dropped":  # killed between two of its endless steps
        assert "stream_dropped" in kinds
    elif status in ("cancelled", "timeout"):
        # Killed mid-tool: nothing was flushed for the running call, and the last step never finished.
        assert "last_step_unfinished" in kinds
    if name == "tool_errors":
        assert {"tool_error", "nonzero_exit"} <= kinds


def test_the_recorded_files_are_all_described():
    traces = {path.name.removesuffix(".jsonl") for path in REAL.glob("*.jsonl") if not path.name.endswith(".proxy.jsonl")}
    assert traces == set(EXPECTED)


def test_the_opencode_env_run_keeps_its_proxy_trace_and_the_proxy_trace_is_no_trace():
    from smoldata_tui.fleet.check import collect_traces
    from smoldata_tui.session.proxy_trace import load_proxy_trace

    metadata = load_metadata(REAL / "opencode_env_run.meta.json")
    assert metadata.harness == "opencode-env" and metadata.proxy_trace == "opencode_env_run.proxy.jsonl"
    turns, problems = load_proxy_trace(REAL / metadata.proxy_trace)
    assert problems == [] and sum(turn.with_tools for turn in turns) == 4  # one per agent step
    assert all(turn.finish_reason for turn in turns)
    assert REAL / metadata.proxy_trace not in collect_traces([str(REAL)])
