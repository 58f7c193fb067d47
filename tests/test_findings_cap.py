"""A file of junk lines makes a bounded list of findings: each kind a bad line makes is listed one by
one up to LISTED_PER_KIND times, the rest of it are one finding that says how many and where, the
same whether the trace is read in one pass or in parts merged; `check --json` stays small."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace import findings as findings_module
from smoldata_tui.trace.build import TraceBuilder

from .test_parallel import canonical, merged_at

BAD_LINES = {"malformed_line": b"npm warn deprecated", "not_an_object": b"[1, 2]", "wrapper_crash": b"[" * 2000 + b"]" * 2000}


def _trace(kinds: list[str]) -> bytes:
    builder = TraceBuilder()
    builder.step_start()
    builder.bash("ls", "a.csv\n")
    builder.step_finish("stop")
    good = builder.dumps().splitlines()
    lines = good[:2] + [BAD_LINES[kind] for kind in kinds] + good[2:]
    return b"\n".join(lines) + b"\n"


def test_junk_lines_past_the_limit_become_one_finding(monkeypatch):
    monkeypatch.setattr(findings_module, "LISTED_PER_KIND", 5)
    report = analyze_bytes(_trace(["malformed_line"] * 12 + ["not_an_object"] * 3))[0]
    malformed = [finding for finding in report.findings if finding.kind == "malformed_line"]
    assert [finding.line for finding in malformed] == [3, 4, 5, 6, 7, 8]
    assert malformed[-1].message == "7 more lines like the 5 above, from here to line 14, not listed one by one"
    assert len([finding for finding in report.findings if finding.kind == "not_an_object"]) == 3  # under the limit
    assert report.verdict.native_tool_calls is None  # the verdict still sees every line


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(sorted(BAD_LINES)), max_size=40), cuts=st.lists(st.integers(0, 100), max_size=4))
def test_parts_merged_list_the_same_findings_as_one_pass(tmp_path, monkeypatch, kinds, cuts):
    monkeypatch.setattr(findings_module, "LISTED_PER_KIND", 4)
    data = _trace(kinds)
    path = tmp_path / "junk.jsonl"
    path.write_bytes(data)
    assert canonical(merged_at(path, data, cuts)) == canonical(analyze_bytes(data)[0])


@pytest.mark.parametrize("lines", [100_000])
def test_check_json_of_a_junk_log_stays_small(tmp_path, lines):
    log = tmp_path / "npm.jsonl"
    log.write_bytes(b"npm warn deprecated inflight@1.0.6: This module is not supported\n" * lines)
    result = subprocess.run([sys.executable, "-m", "smoldata_tui", "check", "--json", "--no-cache", str(log)],
                            capture_output=True, timeout=120)  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert len(result.stdout) < 300_000  # one finding a line: 16 MB
    findings = json.loads(result.stdout)["findings"]
    assert len(findings) == findings_module.LISTED_PER_KIND + 2  # the listed, the rest, no step_finish
    assert f"{lines - findings_module.LISTED_PER_KIND:,} more lines" in findings[-2]["message"]
