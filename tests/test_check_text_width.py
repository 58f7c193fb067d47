"""``check``'s text tables in a pipe, a file or a CI log are not cut to a guessed 80 columns: with no
terminal and no ``COLUMNS`` every row is whole (the table, ``--summary``, ``--groups``); ``COLUMNS``
is respected when set. The real CLI in a fresh interpreter, its stdout a pipe."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .conftest import ROOT, SAMPLES
from .test_groups import RIGHT, WRONG, _batch, _trace

LONG_TASK = "sales-top-region-by-quarter-with-returns-netted-out"  # over the 32 a terminal's column holds
LONG_MODEL = "replay:/a/long/folder/of/recorded/episodes/for/this/model/passing_run.jsonl"


def _check(*args: str, columns: str | None = None) -> str:
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env["NO_COLOR"] = "1"
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([sys.executable, "-m", "smoldata_tui", "check", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _fleet(tmp_path):
    _batch(tmp_path, [(LONG_TASK, 0, 1.0, _trace(RIGHT)), (LONG_TASK, 1, 0.0, _trace(WRONG)),
                      (LONG_TASK, 2, 0.0, _trace(WRONG))])  # fmt: skip
    for meta in tmp_path.rglob("run.meta.json"):
        meta.write_text(meta.read_text().replace('"Qwen/Qwen3.5-4B"', f'"{LONG_MODEL}"'))
    return str(tmp_path)


def test_the_table_in_a_pipe_keeps_long_names_and_the_whole_first_finding(tmp_path):
    long_name = tmp_path / ("an-episode-of-a-task-with-a-long-descriptive-name-" + "x" * 30 + ".jsonl")
    shutil.copy(SAMPLES / "invalid_tool.jsonl", long_name)
    shutil.copy(SAMPLES / "tool_errors.jsonl", tmp_path / "tool_errors.jsonl")
    out = _check(str(tmp_path))
    row = next(line for line in out.splitlines() if "an-episode" in line)
    assert long_name.name in row  # not cut from the left at 40
    # The sentence goes on past the 90 characters a terminal's column gets, to the engine's own end.
    assert "Available tools: bash, edit, glob, grep, list, read" in row


def test_summary_in_a_pipe_keeps_a_long_task_name(tmp_path):
    out = _check("--summary", _fleet(tmp_path))
    assert any(line.startswith(LONG_TASK + " ") for line in out.splitlines()), out


def test_groups_in_a_pipe_keep_the_header_whole(tmp_path):
    out = _check("--groups", _fleet(tmp_path))
    assert f"{LONG_TASK} · {LONG_MODEL} · 3 attempt(s)" in out, out


def test_columns_is_respected_when_set(tmp_path):
    fleet = _fleet(tmp_path)
    for args in (["--groups", fleet], [str(SAMPLES / "invalid_tool.jsonl"), str(SAMPLES / "tool_errors.jsonl")]):
        lines = _check(*args, columns="80").splitlines()
        assert lines and max(len(line) for line in lines) <= 80, lines
