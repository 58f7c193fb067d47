"""`smoldata-tui diff --json` end to end, through the real entry point, on traces whose differences
are known: a changed command, an inserted call, a removed call, and two runs identical up to ids,
timestamps and sandbox paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smoldata_tui.store.metadata import EpisodeMetadata, Grade
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.trace.build import TraceBuilder

from .conftest import SAMPLES

LS = ("ls -la /home/user/input", "sales.csv\n")
HEAD = ("head -3 /home/user/input/sales.csv", "order_id,region\n1,West\n")
PY = ("python3 /tmp/tmp.Qw3rTy9UiO/top.py", "West\n")
ANSWER = {"filePath": "/workdir/answer.txt", "content": "West"}


def episode(path: Path, commands, *, session="ses_4892557ffffeJq7Vd2KxP9mTnR", start_ms=1767225600000,
            answer=ANSWER, garbage_after: int | None = None) -> dict[str, int]:  # fmt: skip
    """Write a trace: one step per bash command, then the answer. Returns each call's line by label."""
    builder = TraceBuilder(session_id=session, start_ms=start_ms)
    lines: dict[str, int] = {}
    for number, (command, output) in enumerate(commands):
        builder.step_start()
        builder.text("Next step.")
        builder.bash(command, output)
        lines[command] = len(builder.events)
        builder.step_finish("tool-calls")
        if garbage_after == number:
            builder.events.append(None)  # a placeholder, written as a stray log line below
    builder.step_start()
    builder.tool("write", answer, "Wrote file successfully.")
    lines["write"] = len(builder.events)
    builder.step_finish("stop")
    data = b"".join(
        b"npm warn deprecated something\n" if event is None else _dump(event) for event in builder.events
    )
    path.write_bytes(data)
    return lines


def _dump(event: dict) -> bytes:
    from smoldata_tui.trace.build_json import dumps_event

    return dumps_event(event)


def diff_json(cli, a: Path, b: Path, expect_rc: int) -> dict:
    result = cli("diff", "--json", str(a), str(b))
    assert result.returncode == expect_rc, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def ops(data: dict) -> list[str]:
    return [pair["op"] for pair in data["pairs"]]


def test_changed_command(cli, tmp_path):
    lines_a = episode(tmp_path / "a.jsonl", [LS, HEAD, PY])
    changed = ("head -5 /home/user/input/sales.csv", "order_id,region\n1,West\n2,East\n3,West\n4,North\n")
    lines_b = episode(tmp_path / "b.jsonl", [LS, changed, PY], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT")
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 1)
    assert ops(data) == ["same", "changed", "same", "same"]
    assert [pair["tool"] for pair in data["pairs"]] == ["bash", "bash", "bash", "write"]
    changed_pair = data["pairs"][1]
    assert (changed_pair["a_line"], changed_pair["b_line"]) == (lines_a[HEAD[0]], lines_b[changed[0]])
    assert changed_pair["output_differs"] is True
    assert data["first_divergence"] == {"a_line": lines_a[HEAD[0]], "b_line": lines_b[changed[0]]}
    assert data["pairs"][0]["output_differs"] is False
    assert data["a"]["calls"] == 4 and data["b"]["calls"] == 4


def test_inserted_call(cli, tmp_path):
    extra = ("wc -l /home/user/input/sales.csv", "3\n")
    episode(tmp_path / "a.jsonl", [LS, HEAD, PY])
    lines_b = episode(tmp_path / "b.jsonl", [LS, extra, HEAD, PY], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT")
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 1)
    assert ops(data) == ["same", "only_b", "same", "same", "same"]
    inserted = data["pairs"][1]
    assert inserted == {"op": "only_b", "tool": "bash", "a_line": None, "b_line": lines_b[extra[0]],
                        "output_differs": None}  # fmt: skip
    assert data["first_divergence"] == {"a_line": None, "b_line": lines_b[extra[0]]}


def test_removed_call(cli, tmp_path):
    lines_a = episode(tmp_path / "a.jsonl", [LS, HEAD, PY])
    episode(tmp_path / "b.jsonl", [LS, PY], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT")
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 1)
    assert ops(data) == ["same", "only_a", "same", "same"]
    assert data["first_divergence"] == {"a_line": lines_a[HEAD[0]], "b_line": None}


def test_identical_up_to_ids_timestamps_and_sandbox_paths(cli, tmp_path):
    lines_a = episode(tmp_path / "a.jsonl", [LS, HEAD, PY])
    other_tmp = ("python3 /tmp/tmp.Zx8vBn2MlK/top.py", "West\n")
    ls_b = ("ls -la /home/user/input", "sales.csv\n")
    lines_b = episode(tmp_path / "b.jsonl", [ls_b, HEAD, other_tmp], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT",
                      start_ms=1767229200000)  # fmt: skip
    raw_a, raw_b = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "b.jsonl").read_bytes()
    assert raw_a != raw_b and b"ses_4892557ffffe" not in raw_b and b"tmp.Qw3rTy9UiO" not in raw_b
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 0)
    assert ops(data) == ["same"] * 4
    assert all(pair["output_differs"] is False for pair in data["pairs"])
    assert [pair["a_line"] for pair in data["pairs"]] == [lines_a[LS[0]], lines_a[HEAD[0]], lines_a[PY[0]], lines_a["write"]]
    assert [pair["b_line"] for pair in data["pairs"]] == [lines_b[LS[0]], lines_b[HEAD[0]], lines_b[other_tmp[0]], lines_b["write"]]
    assert data["first_divergence"] is None


def test_a_different_temporary_path_in_an_output_is_not_an_output_difference(cli, tmp_path):
    a = [("mktemp -d", "/tmp/tmp.Qw3rTy9UiO\n")]
    b = [("mktemp -d", "/tmp/tmp.Zx8vBn2MlK\n")]
    episode(tmp_path / "a.jsonl", a)
    episode(tmp_path / "b.jsonl", b, session="ses_48925a1c2ffeQx8Wb3LzR7nSkT")
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 0)
    assert [pair["output_differs"] for pair in data["pairs"]] == [False, False]


def test_same_input_different_output_is_same_with_output_differs(cli, tmp_path):
    episode(tmp_path / "a.jsonl", [LS, ("python3 top.py", "West\n")])
    episode(tmp_path / "b.jsonl", [LS, ("python3 top.py", "East\n")], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT")
    data = diff_json(cli, tmp_path / "a.jsonl", tmp_path / "b.jsonl", 0)
    assert ops(data) == ["same", "same", "same"]
    assert [pair["output_differs"] for pair in data["pairs"]] == [False, True, False]


def test_a_line_that_does_not_parse_still_diffs_and_says_so(cli, tmp_path):
    episode(tmp_path / "a.jsonl", [LS, HEAD, PY])
    lines_b = episode(tmp_path / "b.jsonl", [LS, HEAD, PY], session="ses_48925a1c2ffeQx8Wb3LzR7nSkT",
                      garbage_after=0)  # fmt: skip
    result = cli("diff", "--json", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert ops(data) == ["same"] * 4
    garbage_line = lines_b[LS[0]] + 2  # after the call and its step_finish
    assert (tmp_path / "b.jsonl").read_bytes().split(b"\n")[garbage_line - 1].startswith(b"npm warn")
    assert data["b"]["skipped"] == [{"line": garbage_line, "reason": "not JSON: Expecting value: line 1 column 1 (char 0)"}]
    assert data["b"]["verdict"] is None and data["b"]["verdict_reason"].startswith("JSONDecodeError")
    assert data["a"]["skipped"] == [] and data["a"]["verdict"] == 4
    assert f"B {tmp_path / 'b.jsonl'}: 1 line(s) not compared" in result.stderr


def test_truncated_last_line_is_skipped(cli):
    data = diff_json(cli, SAMPLES / "clean_pass.jsonl", SAMPLES / "truncated_last_line.jsonl", 1)
    skipped = data["b"]["skipped"]
    assert len(skipped) == 1 and skipped[0]["reason"].startswith("line is cut short")
    assert ops(data)[-1] == "only_a"  # the write call was on the cut line


def test_episode_folders_bring_task_grade_and_verdict(cli, tmp_path):
    for name, grade, answer in (("run-a", 1.0, ANSWER), ("run-b", 0.0, {**ANSWER, "content": "North"})):
        folder = tmp_path / name
        folder.mkdir()
        episode(folder / "run.jsonl", [LS, HEAD], answer=answer)
        save_metadata(folder / "run.meta.json", EpisodeMetadata(task="sales-top-region", status="finished",
                                                                 grade=Grade(env_reward=grade), trace="run.jsonl"))  # fmt: skip
    data = diff_json(cli, tmp_path / "run-a", tmp_path / "run-b", 1)
    assert data["a"]["path"] == str(tmp_path / "run-a" / "run.jsonl")
    assert (data["a"]["task"], data["a"]["grade"], data["a"]["verdict"], data["a"]["calls"]) == ("sales-top-region", 1.0, 3, 3)
    assert (data["b"]["task"], data["b"]["grade"]) == ("sales-top-region", 0.0)
    assert ops(data) == ["same", "same", "changed"]


def test_real_runs_of_one_task_in_two_sandboxes_are_the_same(cli):
    # Recorded with the real OpenCode 1.18.31: two harnesses, two sandboxes, other ids and times.
    data = diff_json(cli, SAMPLES / "real" / "passing_run.jsonl", SAMPLES / "real" / "opencode_env_run.jsonl", 0)
    assert ops(data) == ["same", "same", "same"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: [str(tmp / "missing.jsonl"), str(SAMPLES / "clean_pass.jsonl")], "missing.jsonl: no such file or directory"),
        (lambda tmp: [str(SAMPLES / "clean_pass.jsonl"), str(tmp)], "no trace in this folder"),
        (lambda tmp: [str(SAMPLES / "real"), str(SAMPLES / "clean_pass.jsonl")], "traces in this folder"),
    ],
)
def test_usage_errors_exit_two_with_one_line(cli, tmp_path, make, message):
    result = cli("diff", "--json", *make(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_without_a_terminal_it_prints_the_diff_as_text(cli):
    """A pipe, a file or a CI log gets what the screen shows, as text, with the same exit status."""
    real = SAMPLES / "real"
    result = cli("diff", str(real / "passing_run.jsonl"), str(real / "failing_run.jsonl"))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"A  {real / 'passing_run.jsonl'} · sales-top-region · finished · native_tool_calls = 3")
    assert "reward 0 · 1 call · " in lines[1]
    assert lines[2] == "first divergence: pair 1 (A line 3); 3 of 3 pairs differ"
    rows = [line for line in lines if line[:1] in "=~-+" and line[3:8].strip().isdigit()]
    assert [row.split()[:3] for row in rows] == [["-", "1", "bash"], ["-", "2", "bash"], ["~", "3", "write"]]
    assert "$ head -3 /home/user/input/sales.csv" in rows[0] and rows[2].count("/workdir/answer.txt") == 2
    same = cli("diff", str(real / "passing_run.jsonl"), str(real / "passing_run.jsonl"))
    assert same.returncode == 0 and "the same 3 calls in the same order" in same.stdout
    assert result.stderr == same.stderr == ""


def test_missing_argument_is_a_usage_error(cli):
    result = cli("diff", "--json", str(SAMPLES / "clean_pass.jsonl"))
    assert result.returncode == 2


@pytest.mark.parametrize("sample", sorted(path.name for path in SAMPLES.glob("*.jsonl")))
def test_json_reading_gives_the_screens_calls_verdict_and_skipped_lines(sample):
    # --json reads verdict-only, the screen in full: the calls and what is skipped must agree.
    from smoldata_tui.diff import load_episode

    full = load_episode(SAMPLES / sample)
    light = load_episode(SAMPLES / sample, verdict_only=True)
    assert light.calls == full.calls
    assert light.skipped == full.skipped
    assert light.report.verdict.badge() == full.report.verdict.badge()


def test_an_opencode_export_document_is_compared_by_its_converted_calls(cli):
    """As the viewer opens it: the export of an episode has the same calls as its stream; the verdict
    stays the wrapper's rule on the document's own bytes (None: it is not JSON Lines)."""
    from smoldata_tui.diff import diff_paths
    from smoldata_tui.diff.calls import CallReader

    real = SAMPLES / "real"
    export, stream = real / "export_document.export.json", real / "export_document.jsonl"
    result = cli("diff", "--json", str(export), str(stream))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["a"]["calls"] == report["b"]["calls"] == 3 and report["a"]["skipped"] == []
    assert {pair["op"] for pair in report["pairs"]} == {"same"}
    assert report["a"]["verdict"] is None and report["b"]["verdict"] == 3
    assert "`opencode export` document" in result.stderr and "converted" in result.stderr
    diff = diff_paths(str(export), str(stream))
    with CallReader(diff.a.path) as reader_a, CallReader(diff.b.path) as reader_b:
        for pair in diff.pairs:  # the detail reads each call back from the same conversion
            assert reader_a.part(diff.call_a(pair))["callID"] == reader_b.part(diff.call_b(pair))["callID"]


def test_a_file_with_no_event_is_not_a_trace_to_compare(cli, tmp_path):
    """Two logs of junk were 'the same 0 calls' (exit 0): a file none of whose lines is an event is a
    usage error, named; an empty trace is still compared (its status says empty)."""
    junk = tmp_path / "npm.jsonl"
    junk.write_text("npm warn deprecated inflight@1.0.6\n[1, 2]\n")
    for argv in (["--json", str(junk), str(SAMPLES / "clean_pass.jsonl")], [str(SAMPLES / "clean_pass.jsonl"), str(junk)]):
        result = cli("diff", *argv)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.strip() == f"smoldata-tui diff: {junk}: not a trace: none of its 2 lines is a JSON event"
