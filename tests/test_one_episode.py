"""One episode, every surface: ``check --json``, the fleet's row and the viewer (the real app,
driven by Pilot) give the same finding kinds and counts, the same verdict, for every shipped
sample and for the shapes a saved episode takes: with a configuration but no capture, captured
(openenv's export validation in its capture record, OpenCode's title request in its requests),
with a capture that failed, and a run whose process died without saving its end; the fleet row,
the viewer's header and the diff's side say the same status and grade. ``episode/findings.py`` is the one place the findings from
outside the stream are gathered."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from smoldata_tui.diff.calls import read_calls
from smoldata_tui.diff.report import side_facts
from smoldata_tui.fleet.work import analyze_trace
from smoldata_tui.store.metadata import EpisodeMetadata, Grade, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata

from .conftest import SAMPLES, run_cli
from .test_ui_helpers import loaded, replay_app
from smoldata_tui.ui.widgets.header import EpisodeHeader

MULTIPLE_ROOTS = ("[WARN] multiple_roots: 2 roots across 5 turns. Each root is a separate conversation "
                  "(subagent, aux call, or a rewritten prompt that broke the chain).")  # fmt: skip
SIDE_REQUEST = {"model": "m", "max_tokens": 4096, "enable_thinking": False, "tools": [], "messages": 3}
AGENT_REQUEST = {"model": "m", "max_tokens": 4096, "enable_thinking": False, "tools": ["bash", "read"], "messages": 2}


def _shapes(folder: Path) -> list[Path]:
    """Every shipped sample (with what lies beside it), and three saved-episode shapes."""
    traces = []
    for sample in sorted(SAMPLES.rglob("*.jsonl")):
        if sample.name.endswith(".proxy.jsonl"):
            continue
        target = folder / sample.relative_to(SAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        for sibling in sample.parent.glob(sample.name.removesuffix(".jsonl") + ".*"):
            shutil.copy(sibling, target.parent / sibling.name)
        traces.append(target)
    config = {"provider": {"intercepted": {"options": {"baseURL": "http://127.0.0.1:1/v1"}}},
              "tools": {"webfetch": False, "question": False, "task": False}, "permission": {"*": "allow"}}  # fmt: skip
    for name, capture, requests in (
        ("no-capture", {"enabled": False}, None),
        ("captured", {"enabled": True, "level": "tokens", "trainable": True, "validation": [MULTIPLE_ROOTS],
                      "probe_findings": ["logprobs look raw (not processed): importance ratios would be off"]},
         [SIDE_REQUEST, AGENT_REQUEST, AGENT_REQUEST]),
        ("capture-failed", {"enabled": True, "failed": "openenv's probe: connection refused"}, None),
        ("died-running", {"enabled": False}, None),
    ):  # fmt: skip
        trace = folder / name / "run.jsonl"
        trace.parent.mkdir(parents=True)
        shutil.copy(SAMPLES / "real" / "passing_run.jsonl", trace)
        running = name == "died-running"  # saved as running by a process that is gone: interrupted
        save_metadata(metadata_path_for(trace), EpisodeMetadata(
            task="sales-top-region", model="m", status="running" if running else "finished",
            started_at="2026-12-04T10:00:00Z", grade=None if running else Grade(env_reward=1.0, correctness=1),
            config=config, capture=capture, trace="run.jsonl", owner=_dead_owner() if running else {}))  # fmt: skip
        if requests:
            trace.with_name("run.requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests))
        traces.append(trace)
    return traces


def _dead_owner() -> dict:
    """An owner record of a process that has ended (its pid no longer runs with that start time)."""
    process = subprocess.Popen(["true"])
    process.wait()
    return {"pid": process.pid, "start_time": 1, "host": None}


def _kinds(findings) -> Counter:
    return Counter((finding["kind"], finding["severity"]) if isinstance(finding, dict)
                   else (finding.kind, finding.severity.value) for finding in findings)  # fmt: skip


async def test_check_the_fleet_row_and_the_viewer_agree_on_every_sample_and_shape(tmp_path):
    traces = _shapes(tmp_path / "episodes")
    checked = run_cli("check", "--json", "--no-cache", *map(str, traces), timeout=300)
    lines = {json.loads(line)["path"]: json.loads(line) for line in checked.stdout.splitlines()}
    disagreements = []
    for trace in traces:
        line = lines[str(trace)]
        _, summary = analyze_trace(str(trace), with_metadata=True)
        expected = _kinds(line["findings"])
        row_kinds = Counter(summary.kinds)
        line_kinds = Counter(finding["kind"] for finding in line["findings"])
        if row_kinds != line_kinds or summary.native_tool_calls != line["native_tool_calls"]:
            disagreements.append((trace.name, "fleet row", dict(row_kinds), dict(line_kinds)))
        app = replay_app(trace)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await loaded(pilot)
            shown = _kinds(screen.model.findings[: screen.model.finding_count])
            verdict = screen.verdict.native_tool_calls if screen.verdict is not None else None
            header = screen.query_one(EpisodeHeader).state
        if shown != expected or verdict != line["native_tool_calls"]:
            disagreements.append((str(trace.relative_to(tmp_path)), "viewer", dict(shown), dict(expected)))
        side = side_facts(read_calls(trace))
        if summary.has_meta and (header.status, header.grade) != (summary.status, summary.grade):
            disagreements.append((str(trace.relative_to(tmp_path)), "viewer header", header.status, summary.status))
        if summary.has_meta and (side.status, side.grade_text, side.verdict) != (summary.status, summary.grade, line["native_tool_calls"]):
            disagreements.append((str(trace.relative_to(tmp_path)), "diff side", side.status, summary.status))
        if not summary.has_meta and side.status != header.status:  # a bare trace: its own findings say how it ended
            disagreements.append((str(trace.relative_to(tmp_path)), "diff side (bare trace)", side.status, header.status))
    assert disagreements == []
    died = analyze_trace(str(tmp_path / "episodes" / "died-running" / "run.jsonl"), with_metadata=True)[1]
    assert died.status == "interrupted"
    captured = lines[str(tmp_path / "episodes" / "captured" / "run.jsonl")]
    assert ("capture_export", "info") in _kinds(captured["findings"])  # OpenCode's title request is a root of its own
    assert ("capture_probe", "warning") in _kinds(captured["findings"])
    failed = lines[str(tmp_path / "episodes" / "capture-failed" / "run.jsonl")]
    assert ("capture_failed", "error") in _kinds(failed["findings"])
