"""Every shipped sample trace shows what its name says, and the engine agrees with the seed on it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from smoldata_tui.trace import analyze_path
from smoldata_tui.trace.seed_rule import seed_outcome

from .conftest import SAMPLES

# file → (verdict: int, None or "crash:Name", finding kinds that must be present)
EXPECTED = {
    "clean_pass.jsonl": (3, set()),
    "missing_call_id.jsonl": (None, {"missing_call_id"}),
    "duplicate_call_id_reemitted.jsonl": (None, {"duplicate_call_id"}),
    "duplicate_call_id_reused.jsonl": (None, {"duplicate_call_id"}),
    "unfinished_call.jsonl": (None, {"unfinished_call"}),
    "tool_errors.jsonl": (3, {"tool_error", "nonzero_exit"}),
    "invalid_tool.jsonl": (2, {"invalid_tool"}),
    "no_step_finish.jsonl": (None, {"no_step_finish"}),
    "killed_mid_step.jsonl": (3, {"last_step_unfinished"}),
    "unmatched_steps.jsonl": (2, {"unmatched_step"}),
    "provider_error.jsonl": (None, {"error_event", "no_step_finish"}),
    "provider_error_after_steps.jsonl": (1, {"error_event"}),
    "malformed_line.jsonl": (None, {"malformed_line"}),
    "truncated_last_line.jsonl": (None, {"truncated_line"}),
    "line_separator_in_output.jsonl": (None, {"wrapper_split"}),
    "undecodable_bytes.jsonl": (None, {"undecodable"}),
    "unknown_event_type.jsonl": (1, {"unknown_event_type"}),
    "multiple_sessions.jsonl": (2, {"multiple_sessions"}),
    "timestamps_backwards.jsonl": (2, {"time_backwards"}),
    "empty.jsonl": (None, {"empty_stream"}),
    "wrapper_crash_state_null.jsonl": ("crash:AttributeError", {"wrapper_crash"}),
    "wrapper_crash_non_object.jsonl": ("crash:AttributeError", {"not_an_object"}),
    "wrapper_crash_deep_nesting.jsonl": ("crash:RecursionError", {"wrapper_crash"}),
}


def test_every_sample_is_described_and_expected():
    shipped = {path.name for path in SAMPLES.glob("*.jsonl")}
    assert shipped == set(EXPECTED)
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for name in shipped:
        assert f"`{name}`" in readme, f"{name} has no line in sample_traces/README.md"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict_and_findings(name):
    expected_verdict, expected_kinds = EXPECTED[name]
    path = SAMPLES / name
    report, _ = analyze_path(path)
    verdict = report.verdict
    shown = f"crash:{verdict.wrapper_crash}" if verdict.wrapper_crash else verdict.native_tool_calls
    assert shown == expected_verdict
    seed = seed_outcome(path.read_bytes())
    assert verdict.native_tool_calls == seed.calls
    assert verdict.wrapper_crash == (type(seed.crash).__name__ if seed.crash else None)
    kinds = {finding.kind for finding in report.findings}
    assert expected_kinds <= kinds, (kinds, report.findings)
    if expected_verdict == 3 and name == "clean_pass.jsonl":
        assert report.findings == []
    for finding in report.findings:  # findings point at lines that exist
        assert finding.line is None or 1 <= finding.line <= max(report.lines, 1)
        assert finding.message and "\x1b" not in finding.message


def test_samples_are_up_to_date_with_their_generator():
    done = subprocess.run(
        [sys.executable, str(SAMPLES / "make_samples.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
