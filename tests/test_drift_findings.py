"""Version drift as a finding: an episode recorded with another OpenCode than the environment's
pin, or offered other tools than its version offers with the environment's configuration."""

from __future__ import annotations

import json
from pathlib import Path

from smoldata_tui.episode.findings import episode_findings
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.opencode.tools import offered_tools
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.training.config_findings import sidecar_findings

from .conftest import SAMPLES, run_cli

CONFIG = {"provider": {"intercepted": {}}, "tools": {"webfetch": False, "question": False, "task": False},
          "permission": {"*": "allow"}}  # fmt: skip
POLICY = {"max_tokens": 4096, "enable_thinking": False}
DRIFT = {"opencode_version_drift", "offered_tools_drift", "opencode_version_mismatch"}


def _episode(folder: Path, *, asked: str, seen: str | None, tools: list[str] | None) -> Path:
    folder.mkdir()
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("ls", "a.csv\n")
    builder.step_finish("tool-calls")
    trace = folder / "run.jsonl"
    trace.write_bytes(builder.dumps())
    save_metadata(folder / "run.meta.json", EpisodeMetadata(config=CONFIG, capture={"enabled": True}, opencode_version=asked,
                                                            sandbox={"opencode_version": seen} if seen else {}))  # fmt: skip
    if tools is not None:
        requests = [{**POLICY, "tools": []}, {**POLICY, "tools": tools}]
        (folder / "run.requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
    return trace


def _drift(trace: Path) -> dict[str, str]:
    return {f.kind: f.message for f in sidecar_findings(trace) if f.kind in DRIFT}


def test_the_pinned_version_with_its_tools_has_no_drift_finding(tmp_path):
    pinned = sorted(offered_tools("1.18.31"))
    assert _drift(_episode(tmp_path / "a", asked="1.18.31", seen="1.18.31", tools=pinned)) == {}
    # The shipped recordings: all 1.18.31, and opencode_env's proxy trace offers the same ten tools.
    shipped = sorted(SAMPLES.glob("real/*.jsonl"))
    assert len(shipped) >= 10
    for trace in shipped:
        assert _drift(trace) == {}, trace


def test_another_version_is_a_drift_finding_everywhere_findings_are_shown(tmp_path):
    trace = _episode(tmp_path / "a", asked="1.18.33", seen="1.18.33", tools=sorted(offered_tools("1.18.33")))
    found = _drift(trace)
    assert set(found) == {"opencode_version_drift"}
    assert "OpenCode 1.18.33" in found["opencode_version_drift"] and "pins 1.18.31" in found["opencode_version_drift"]
    assert "opencode_version_drift" in {f.kind for f in episode_findings(trace, [], {}, load_metadata(trace.with_name("run.meta.json")))}
    report = json.loads(run_cli("check", "--json", str(trace)).stdout)
    [finding] = [f for f in report["findings"] if f["kind"] == "opencode_version_drift"]
    assert finding["severity"] == "warning" and finding["line"] is None
    # Without a sandbox record, the version asked for is the one that ran.
    assert set(_drift(_episode(tmp_path / "b", asked="1.18.32", seen=None, tools=None))) == {"opencode_version_drift"}


def test_a_sandbox_that_ran_another_version_is_one_mismatch_not_two_findings(tmp_path):
    found = _drift(_episode(tmp_path / "a", asked="1.18.33", seen="1.18.32", tools=None))
    assert set(found) == {"opencode_version_mismatch"}
    assert "ran OpenCode 1.18.32, not the requested 1.18.33 (the environment pins 1.18.31)" in found["opencode_version_mismatch"]
    pinned = _drift(_episode(tmp_path / "b", asked="1.18.31", seen="1.17.0", tools=None))
    assert pinned == {"opencode_version_mismatch": "the sandbox ran OpenCode 1.17.0, not the pinned 1.18.31"}


def test_other_offered_tools_are_a_drift_finding_naming_them(tmp_path):
    tools = sorted(offered_tools("1.18.31") - {"webfetch", "skill"} | {"patch"})
    found = _drift(_episode(tmp_path / "a", asked="1.18.31", seen="1.18.31", tools=tools))
    assert set(found) == {"offered_tools_drift"}
    assert "offered patch besides; not offered skill, webfetch" in found["offered_tools_drift"]
    assert "OpenCode 1.18.31" in found["offered_tools_drift"]
    # A version nobody measured: its tools are not judged, its version is.
    unknown = _drift(_episode(tmp_path / "b", asked="1.19.0", seen="1.19.0", tools=["bash"]))
    assert set(unknown) == {"opencode_version_drift"}
