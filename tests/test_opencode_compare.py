"""``smoldata-tui opencode compare``: real replays on two real OpenCode versions from npm, and the
shape comparison that reports what an upgrade changed (checked on a hand-edited recording)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from smoldata_tui.diff.opencode_compare import default_recordings, print_table
from smoldata_tui.opencode.install import ensure_opencode
from smoldata_tui.opencode.tools import offered_tools
from smoldata_tui.training.trace_shape import read_shape, shape_changes

from .conftest import ROOT, SAMPLES, run_cli

FIXTURE = Path(__file__).parent / "data" / "opencode_compare_1.18.31_1.18.33.json"
ROW_KEYS = {"recording", "old", "new", "events_added", "events_removed", "fields_added", "fields_removed",
            "tools_offered_added", "tools_offered_removed", "divergences"}  # fmt: skip


def test_compare_replays_a_recording_on_1_18_31_and_1_18_33_as_the_recorded_run_found(tmp_path):
    for version in ("1.18.31", "1.18.33"):  # from npm when missing: ~10 s each here, progress on stderr
        ensure_opencode(version)
    save = tmp_path / "episodes"
    done = run_cli("opencode", "compare", "1.18.31", "1.18.33", str(SAMPLES / "real" / "failing_run.jsonl"),
                   "--json", "--save", str(save), timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    recorded = json.loads(FIXTURE.read_text())
    assert set(result) == set(recorded) == {"old", "new", "recordings"}
    assert (result["old"], result["new"]) == ("1.18.31", "1.18.33")
    [row] = result["recordings"]
    [expected] = [r for r in recorded["recordings"] if r["recording"].endswith("failing_run.jsonl")]
    assert ROW_KEYS <= set(row) and set(row) == set(expected) | {"traces"}
    assert row["old"] == row["new"] == expected["new"] == {"verdict": "native_tool_calls = 1", "grade": 0.0, "exit": 0}
    for key in ROW_KEYS - {"recording", "old", "new"}:
        assert row[key] == expected[key], key
    assert row["tools_offered"]["old"] == sorted(offered_tools("1.18.31"))
    assert row["tools_offered"]["new"] == sorted(offered_tools("1.18.33"))
    assert "replaying 1 recording(s) on OpenCode 1.18.33" in done.stderr
    # The kept episodes are real ones: the new side ran 1.18.33, so check reports the drift from the pin.
    new_trace = row["traces"]["new"]
    meta = json.loads(Path(new_trace).with_name("run.meta.json").read_text())
    assert meta["sandbox"]["opencode_version"] == "1.18.33"
    kinds = [f["kind"] for f in json.loads(run_cli("check", "--json", new_trace).stdout)["findings"]]
    old_kinds = [f["kind"] for f in json.loads(run_cli("check", "--json", row["traces"]["old"]).stdout)["findings"]]
    assert "opencode_version_drift" in kinds and "opencode_version_drift" not in old_kinds
    assert "offered_tools_drift" not in kinds + old_kinds


def _edited_copy(tmp_path: Path) -> tuple[Path, Path]:
    """passing_run twice, with the tools offered as OpenCode 1.18.31 offers them and what the
    model was sent; the second one hand-edited as an upgrade could change it."""
    requests = [{"tools": []}, {"tools": sorted(offered_tools("1.18.31"))}]
    old, new = tmp_path / "old" / "run.jsonl", tmp_path / "new" / "run.jsonl"
    lines = (SAMPLES / "real" / "passing_run.jsonl").read_text().splitlines()
    edited = []
    for line in lines:
        event = json.loads(line)
        state = event.get("part", {}).get("state", {})
        if isinstance(state.get("metadata"), dict):
            state["metadata"].pop("exit", None)
            state["metadata"]["exitCode"] = 0
        if event["type"] == "text":
            event["type"] = "message"
        edited.append(json.dumps(event))
    # the first step's events in another order: its text after its call
    first = json.loads(lines[0])["part"]["messageID"]
    step = [e for e in edited if json.loads(e)["part"].get("messageID") == first]
    rest = [e for e in edited if e not in step]
    step = [step[0], *[e for e in step[1:-1] if '"message"' not in e], *[e for e in step[1:-1] if '"message"' in e], step[-1]]
    bash = {"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": {}}}
    turns = [{"messages": [{"role": "system", "content": "You are OpenCode"}], "tools": [bash]}] * 2
    edited_bash = {"type": "function", "function": {**bash["function"], "description": "Run a shell command"}}
    edited_turns = [turns[0], {"messages": [{"role": "system", "content": "You are OpenCode, v2"}], "tools": [edited_bash]}]
    for path, body, offered, sent in ((old, lines, requests, turns),
                                      (new, step + rest, requests[:1] + [{"tools": ["bash", "read", "patch"]}], edited_turns)):  # fmt: skip
        path.parent.mkdir()
        path.write_text("\n".join(body) + "\n")
        path.with_name("run.requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in offered))
        training = {"schema_version": 1, "turns": [{"request": request} for request in sent]}
        path.with_name("run.training.json").write_text(json.dumps(training))
    return old, new


def test_shape_changes_name_what_a_hand_edited_recording_added_removed_and_reordered(tmp_path):
    old, new = _edited_copy(tmp_path)
    changes = shape_changes(read_shape(old), read_shape(new))
    assert changes["events_added"] == ["message"] and changes["events_removed"] == ["text"]
    assert "tool_use:part.state.metadata.exitCode" in changes["fields_added"]
    assert "tool_use:part.state.metadata.exit" in changes["fields_removed"]
    assert "message:part.text" in changes["fields_added"] and "text:part.text" in changes["fields_removed"]
    assert changes["tools_offered_added"] == ["patch"]
    assert changes["tools_offered_removed"] == sorted(offered_tools("1.18.31") - {"bash", "read"})
    assert changes["order_changes"] == ["step 1: step_start text tool_use step_finish → step_start tool_use message step_finish",
                                        "step 4: step_start text step_finish → step_start message step_finish"]  # fmt: skip
    assert changes["tool_schemas_changed"] == ["bash"] and changes["prompts_changed"] == ["turn 2"]
    same = shape_changes(read_shape(old), read_shape(old))
    assert not any(same.values())


def test_the_table_shows_both_sides_and_every_change():
    result = json.loads(FIXTURE.read_text())
    row = result["recordings"][0]
    row.update(fields_added=["tool_use:part.state.metadata.exitCode"], tools_offered_removed=["webfetch"], divergences=2,
               tool_schemas_changed=["bash"])
    out = io.StringIO()
    print_table(result, out)
    text = out.getvalue()
    assert "OpenCode 1.18.31" in text and "OpenCode 1.18.33" in text
    assert "fields added: tool_use:part.state.metadata.exitCode" in text and "tools offered removed: webfetch" in text
    assert "tool definitions changed: bash" in text
    assert "0 → 2" in text and f"1 of {len(result['recordings'])} recording(s) differ between 1.18.31 and 1.18.33" in text


def test_the_default_recordings_are_the_built_in_harness_runs_that_ended_on_their_own():
    names = [path.name for path in default_recordings()]
    assert names == ["bash_timeout.jsonl", "empty_response.jsonl", "failing_run.jsonl", "finish_length.jsonl",
                     "passing_run.jsonl", "tool_errors.jsonl"]  # fmt: skip
    assert names == [Path(r["recording"]).name for r in json.loads(FIXTURE.read_text())["recordings"]]


def test_bad_input_is_a_usage_error_in_one_line(tmp_path):
    for args, said in ((("latest", "1.18.33"), "not an exact OpenCode version"),
                       (("1.18.31", "1.18.33", str(tmp_path / "missing.jsonl")), "no such file or directory"),
                       (("1.18.31", "1.18.33", "--jobs", "0"), "--jobs must be a positive")):  # fmt: skip
        done = run_cli("opencode", "compare", *args, "--json")
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert done.stdout == ""
    lone = tmp_path / "lone.jsonl"
    shutil.copy(SAMPLES / "real" / "failing_run.jsonl", lone)  # no metadata beside it: which task?
    done = run_cli("opencode", "compare", "1.18.31", "1.18.33", str(lone))
    assert done.returncode == 2 and "pass --task" in done.stderr
    assert ROOT.is_dir()


def test_a_side_that_cannot_run_is_reported_in_its_row_and_exits_1(tmp_path):
    ensure_opencode("1.18.31")
    recording = tmp_path / "rec.jsonl"
    shutil.copy(SAMPLES / "real" / "failing_run.jsonl", recording)
    meta = json.loads((SAMPLES / "real" / "failing_run.meta.json").read_text())
    recording.with_name("rec.meta.json").write_text(json.dumps({**meta, "task": "no-such-task"}))
    done = run_cli("opencode", "compare", "1.18.31", "1.18.31", str(recording), "--json", timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [row] = json.loads(done.stdout.splitlines()[-1])["recordings"]
    assert row["recording"] == str(recording) and row["old"] == row["new"] == {"verdict": None, "grade": None, "exit": None}
    assert [error.split(":")[0] for error in row["errors"]] == ["old", "new"]
    assert all("no task 'no-such-task'" in error for error in row["errors"]), row["errors"]


def test_where_a_text_part_settles_among_a_steps_calls_is_not_an_order_change():
    """One recording on 1.18.33 gave `text tool_use` when recorded and `tool_use text` replayed under load
    (OpenCode writes a text part when it settles, racing the call): that is timing, not a version's
    behaviour. A call more, or a text part fewer, still is one."""
    from smoldata_tui.training.trace_shape import _order_changes

    one = [("step_start", "text", "tool_use", "step_finish")]
    assert _order_changes(one, [("step_start", "tool_use", "text", "step_finish")]) == []
    assert _order_changes(one, [("step_start", "text", "tool_use×2", "step_finish")]) != []
    assert _order_changes(one, [("step_start", "tool_use", "step_finish")]) != []
