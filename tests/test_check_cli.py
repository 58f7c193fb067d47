"""`smoldata-tui check` end to end: the real entry point in a fresh interpreter."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import SAMPLES

CLEAN = str(SAMPLES / "clean_pass.jsonl")


def assert_no_traceback(result):
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout


def test_clean_trace_exits_zero_and_shows_the_verdict(cli):
    result = cli("check", CLEAN)
    assert result.returncode == 0, result.stderr
    assert "clean_pass.jsonl" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "clean_pass.jsonl" in line)
    assert row.split()[1] == "3"  # the verdict column
    assert "1 trace checked, 0 rejected" in result.stdout


def test_rejected_trace_exits_one_and_explains_why(cli):
    result = cli("check", str(SAMPLES / "duplicate_call_id_reused.jsonl"))
    assert result.returncode == 1
    assert "None — ValueError: Missing or repeated tool action IDs (line 5)" in result.stdout
    assert "duplicate_call_id" in result.stdout and "repeats the one on line 2" in result.stdout


def test_crash_is_reported_as_crash(cli):
    result = cli("check", str(SAMPLES / "wrapper_crash_state_null.jsonl"))
    assert result.returncode == 1
    assert "crash: AttributeError" in result.stdout
    assert "wrapper would crash" in result.stdout


def test_json_lines_in_argument_order_with_the_documented_fields(cli):
    order = ["tool_errors.jsonl", "clean_pass.jsonl", "wrapper_crash_non_object.jsonl", "no_step_finish.jsonl"]
    result = cli("check", "--json", *(str(SAMPLES / name) for name in order))
    assert result.returncode == 1
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [os.path.basename(o["path"]) for o in objects] == order
    assert [o["native_tool_calls"] for o in objects] == [3, 3, None, None]
    assert [o["wrapper_crash"] for o in objects] == [None, None, "AttributeError", None]
    for o in objects:
        assert {"path", "native_tool_calls", "wrapper_crash", "findings", "stats"} <= set(o)
        for finding in o["findings"]:
            assert {"line", "kind", "severity", "message"} <= set(finding)
    assert objects[0]["stats"]["calls_by_status"] == {"error": 1, "completed": 2}
    assert any(f["kind"] == "no_step_finish" and f["line"] is None for f in objects[3]["findings"])


def test_directory_expands_to_sorted_traces(cli, tmp_path):
    (tmp_path / "b.jsonl").write_bytes((SAMPLES / "clean_pass.jsonl").read_bytes())
    nested = tmp_path / "run1"
    nested.mkdir()
    (nested / "a.jsonl").write_bytes((SAMPLES / "clean_pass.jsonl").read_bytes())
    (tmp_path / "notes.txt").write_text("not a trace")
    result = cli("check", "--json", str(tmp_path))
    assert result.returncode == 0, result.stderr
    paths = [json.loads(line)["path"] for line in result.stdout.splitlines()]
    assert paths == [str(tmp_path / "b.jsonl"), str(nested / "a.jsonl")]


def test_strict_fails_on_error_findings_the_wrapper_accepts(cli):
    accepted_with_error = str(SAMPLES / "provider_error_after_steps.jsonl")
    assert cli("check", accepted_with_error).returncode == 0
    strict = cli("check", "--strict", accepted_with_error)
    assert strict.returncode == 1
    assert "error_event" in strict.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "does-not-exist.jsonl"], "does-not-exist.jsonl: no such file or directory"),
        (["check"], "the following arguments are required: PATH"),
    ],
)
def test_usage_errors_exit_two_with_one_clear_line(cli, args, message):
    result = cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert_no_traceback(result)


def test_directory_without_traces_is_a_usage_error(cli, tmp_path):
    result = cli("check", str(tmp_path))
    assert result.returncode == 2
    assert "no *.jsonl trace files" in result.stderr
    assert_no_traceback(result)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_a_usage_error(cli, tmp_path):
    locked = tmp_path / "locked.jsonl"
    locked.write_text("{}")
    locked.chmod(0)
    result = cli("check", str(locked))
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_a_directory_named_like_a_trace_is_expanded_not_read(cli, tmp_path):
    odd = tmp_path / "odd.jsonl"
    odd.mkdir()
    result = cli("check", str(odd))
    assert result.returncode == 2
    assert_no_traceback(result)


def test_bad_input_never_gives_a_traceback(cli, tmp_path):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(bytes(range(256)) * 64 + b"\x1b[2J\x07[bold]x[/bold]")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    huge_line = tmp_path / "huge_line.jsonl"
    with huge_line.open("wb") as handle:  # one 50 MB line with no newline
        handle.write(b'{"type":"text","part":{"text":"')
        handle.write(b"x" * (50 * 1024 * 1024))
        handle.write(b'"}}')
    result = cli("check", str(garbage), str(empty), str(huge_line), timeout=300)
    assert result.returncode == 1
    assert_no_traceback(result)
    for name in ("garbage.jsonl", "empty.jsonl", "huge_line.jsonl"):
        assert name in result.stdout
    # Escape sequences and markup from the input reach the output inert.
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout


def test_output_to_a_closed_pipe_is_quiet(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        f"{sys.executable} -m smoldata_tui check --json {SAMPLES} | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in done.stderr


def test_a_missing_path_does_not_stop_the_others_and_exits_two(cli, tmp_path):
    missing = str(tmp_path / "gone.jsonl")
    rejected = str(SAMPLES / "no_step_finish.jsonl")
    table = cli("check", CLEAN, missing, rejected)
    assert table.returncode == 2
    assert table.stderr.splitlines() == [f"smoldata-tui check: {missing}: no such file or directory"]
    assert "clean_pass.jsonl" in table.stdout and "no_step_finish.jsonl" in table.stdout
    assert "2 traces checked, 1 rejected (None), 0 would crash the wrapper, 1 path not found" in table.stdout
    lines = cli("check", "--json", "--summary", CLEAN, missing, rejected)
    assert lines.returncode == 2
    assert lines.stderr.splitlines() == [f"smoldata-tui check: {missing}: no such file or directory"]
    *rows, totals = (json.loads(line) for line in lines.stdout.splitlines())
    assert [os.path.basename(row["path"]) for row in rows] == ["clean_pass.jsonl", "no_step_finish.jsonl"]
    assert (totals["traces"], totals["missing"]) == (2, [missing])


def test_rejections_and_crashes_are_counted_apart_in_the_table_and_the_summary(cli):
    rows = [json.loads(line) for line in cli("check", "--json", str(SAMPLES)).stdout.splitlines()]
    crashes = sum(1 for row in rows if row.get("wrapper_crash"))
    rejected = sum(1 for row in rows if "error" not in row and row["native_tool_calls"] is None) - crashes
    assert crashes and rejected  # the samples have both
    counts = f"{rejected} rejected (None), {crashes} would crash the wrapper"
    assert cli("check", str(SAMPLES)).stdout.splitlines()[-1].endswith(counts)
    assert counts in cli("check", "--summary", str(SAMPLES)).stdout.splitlines()[0]
    deep = cli("check", str(SAMPLES / "wrapper_crash_deep_nesting.jsonl"))
    assert "crash: RecursionError" in deep.stdout
    assert deep.stdout.splitlines()[-1] == "1 trace checked, 0 rejected (None), 1 would crash the wrapper"
