"""`check` on every CPU: the same output, in the same order, as one process; and --summary."""

from __future__ import annotations

import io
import json
import random

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smoldata_tui.commands.check import run_check
from smoldata_tui.fleet.build import DEFECTS, episode_trace, write_fleet
from smoldata_tui.fleet.check import check_all, json_line
from smoldata_tui.store.metadata import metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace.seed_rule import seed_outcome

from .conftest import SAMPLES


def lines(traces, workers):
    return [result.line for result in check_all(traces, as_json=True, with_metadata=True, workers=workers)]


def table_facts(traces, workers):
    return [
        (str(r.path), r.summary, r.report.to_json() if r.report else None)
        for r in check_all(traces, as_json=False, with_metadata=True, workers=workers)
    ]


@st.composite
def trace_sets(draw):
    """Generated episodes (healthy and each defect), shipped samples, and bytes that are not traces."""
    rng = random.Random(draw(st.integers(0, 10**6)))
    items = []
    for number in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["episode", "sample", "garbage"]))
        if kind == "episode":
            defect = draw(st.sampled_from([None, *DEFECTS]))
            items.append(episode_trace(rng, number, defect=defect, steps=rng.randint(1, 6), output_bytes=300))
        elif kind == "sample":
            items.append(draw(st.sampled_from(sorted(SAMPLES.glob("*.jsonl")))).read_bytes())
        else:
            items.append(draw(st.binary(max_size=300)))
    return items


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=trace_sets())
def test_every_cpu_gives_the_one_process_output_in_order(tmp_path_factory, items):
    folder = tmp_path_factory.mktemp("fleet")
    traces = []
    for index, data in enumerate(items):
        path = folder / f"{index:03d}.jsonl"
        path.write_bytes(data)
        traces.append(path)
    traces.insert(len(traces) // 2, folder / "deleted-meanwhile.jsonl")  # listed, then gone
    sequential = lines(traces, workers=1)
    assert lines(traces, workers=2) == sequential
    assert [json.loads(line)["path"] for line in sequential] == [str(path) for path in traces]
    assert table_facts(traces, workers=2) == table_facts(traces, workers=1)


def test_json_lines_are_the_one_process_lines(tmp_path, cli):
    traces = write_fleet(tmp_path / "fleet", 120, seed=3)
    result = cli("check", "--json", str(tmp_path / "fleet"))
    assert result.returncode == 1, result.stderr  # the fleet has rejected traces
    expected = b"".join(json_line(str(path), *_report_and_summary(path)) for path in traces)
    assert result.stdout.encode() == expected


def _report_and_summary(path):
    from smoldata_tui.fleet.work import analyze_trace

    return analyze_trace(str(path))


def seed_totals(traces):
    """The --summary object computed the plain way: the seed's rule on each file's bytes."""
    totals = {"traces": 0, "accepted": 0, "rejected": 0, "crashes": 0, "reasons": {}, "tool_calls": 0, "tasks": {}}
    for path in traces:
        outcome = seed_outcome(path.read_bytes())
        totals["traces"] += 1
        if outcome.crash is not None:
            totals["crashes"] += 1
        elif outcome.calls is None:
            totals["rejected"] += 1
            reason = f"{type(outcome.caught).__name__}: {outcome.caught}"
            totals["reasons"][reason] = totals["reasons"].get(reason, 0) + 1
        else:
            totals["accepted"] += 1
            totals["tool_calls"] += outcome.calls
        metadata = load_metadata(metadata_path_for(path))
        if metadata is not None and metadata.task:
            task = totals["tasks"].setdefault(metadata.task, {"episodes": 0, "graded": 0, "passed": 0})
            task["episodes"] += 1
            reward = metadata.grade.env_reward if metadata.grade else None
            task["graded"] += reward is not None
            task["passed"] += reward == 1.0
    for task in totals["tasks"].values():
        task["pass_rate"] = task["passed"] / task["graded"] if task["graded"] else None
    return totals


def test_summary_json_is_the_seed_rule_counts_and_the_pass_counts(tmp_path, cli):
    traces = write_fleet(tmp_path / "fleet", 150, seed=4, defect_rate=0.4)
    result = cli("check", "--json", "--summary", str(tmp_path / "fleet"))
    assert result.returncode == 1, result.stderr
    *rows, last = result.stdout.splitlines()
    assert len(rows) == len(traces)
    summary = json.loads(last)
    assert set(summary) == {"traces", "accepted", "rejected", "crashes", "reasons", "findings", "tool_calls", "tasks",
                            "signatures"}  # fmt: skip
    signatures = summary.pop("signatures")
    assert sum(signatures.values()) == len(traces)
    assert list(signatures.values()) == sorted(signatures.values(), reverse=True)  # most common first
    for row in rows:  # every episode's signature: its error and warning kinds, how it ended, last tool, grade
        data = json.loads(row)
        codes = sorted({f["kind"] for f in data["findings"] if f["severity"] in ("error", "warning")})
        assert any(signature.startswith(("+".join(codes) or "clean") + " · ") for signature in signatures), codes
    findings = summary.pop("findings")
    assert summary == seed_totals(traces)
    kinds = {}
    for row in rows:
        for finding in json.loads(row)["findings"]:
            kinds[finding["kind"]] = kinds.get(finding["kind"], 0) + 1
    assert findings == kinds
    assert summary["rejected"] and summary["crashes"] and summary["reasons"]  # the fleet tests each


def test_summary_table_shows_the_totals_instead_of_rows(tmp_path, cli):
    write_fleet(tmp_path / "fleet", 40, seed=5, defect_rate=0.5)
    result = cli("check", "--summary", str(tmp_path / "fleet"))
    assert result.returncode == 1, result.stderr
    out = result.stdout
    assert out.startswith("40 traces: ")
    assert "rejection reasons" in out and "findings by kind" in out and "pass rate" in out
    assert "run.jsonl" not in out  # no per-trace rows


def test_bad_input_in_a_fleet_never_stops_the_rest(tmp_path, cli):
    traces = write_fleet(tmp_path / "fleet", 6, seed=6, defect_rate=0)
    metadata_path_for(traces[1]).write_text("{ not json")
    unreadable = "/proc/self/mem"  # a regular file whose read fails (EIO), even for root
    result = cli("check", "--json", "--summary", unreadable, str(tmp_path / "fleet"))
    assert result.returncode == 2  # documented: an unreadable path
    *rows, last = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0] == {"path": unreadable, "error": "cannot read: Input/output error"}
    assert [row["native_tool_calls"] is not None for row in rows[1:]] == [True] * 6
    assert last["traces"] == 7 and last["accepted"] == 6 and last["unreadable"] == 1
    assert f"{unreadable}: cannot read: Input/output error" in result.stderr
    assert "Traceback" not in result.stderr
    table = cli("check", "--summary", unreadable, str(tmp_path / "fleet"))
    assert table.returncode == 2 and "Traceback" not in table.stderr
    assert "7 traces: 6 accepted" in table.stdout and "1 unreadable" in table.stdout
    assert "run.meta.json: it is not valid JSON" in table.stdout
    assert f"{unreadable}: cannot read: Input/output error" in table.stdout


def test_run_check_writes_to_a_text_stream(tmp_path):
    write_fleet(tmp_path / "fleet", 3, seed=7, defect_rate=0)
    out = io.StringIO()
    assert run_check([str(tmp_path / "fleet")], as_json=True, strict=False, summary=True, out=out) == 0
    assert orjson.loads(out.getvalue().splitlines()[-1])["accepted"] == 3


_NAMES = st.sampled_from(["a", "a-b", "a.b", "B", "_x", ".hidden", "run", "z z", "r.requests", "p.proxy", "Ä"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=st.lists(st.tuples(st.lists(_NAMES, max_size=3), _NAMES, st.sampled_from([".jsonl", ".json", ""])),
                     min_size=1, max_size=25))  # fmt: skip
def test_a_directory_lists_its_traces_as_sorted_rglob_does(tmp_path_factory, tree):
    """check's own directory walk (os.scandir) spells and orders paths as sorted(Path.rglob()) would,
    without hidden names (as git and ripgrep skip them)."""
    from pathlib import Path

    from smoldata_tui.fleet.check import collect_traces
    from smoldata_tui.store.metadata import is_trace_name

    root = tmp_path_factory.mktemp("walk")
    for folders, name, suffix in tree:
        folder = root.joinpath(*folders)
        if any(parent.is_file() for parent in [folder, *folder.parents]):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / (name + suffix)
        if not target.exists():
            target.write_bytes(b"{}\n")
    (root / "linked").symlink_to(root, target_is_directory=True)  # rglob does not descend into it
    expected = [str(p) for p in sorted(Path(root).rglob("*.jsonl")) if p.is_file() and is_trace_name(p.name)
                and not any(part.startswith(".") for part in p.relative_to(root).parts)]  # fmt: skip
    if not expected:
        return
    assert collect_traces([str(root)]) == expected
    assert collect_traces([str(root) + "/"]) == expected
