"""``smoldata-tui replay``: arguments and clear errors (the TUI itself is tested with Pilot)."""

from __future__ import annotations

import os

from .conftest import SAMPLES


def test_replay_help(cli):
    result = cli("replay", "--help")
    assert result.returncode == 0
    assert "--follow" in result.stdout and "--speed" in result.stdout and "PATH" in result.stdout


def test_missing_path_is_one_clear_line(cli, tmp_path):
    result = cli("replay", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"smoldata-tui replay: {tmp_path / 'nope.jsonl'}: no such file or directory"
    assert "Traceback" not in result.stderr


def test_bad_options(cli):
    trace = str(SAMPLES / "clean_pass.jsonl")
    result = cli("replay", "--speed", "0", trace)
    assert result.returncode == 2 and "--speed must be a positive number" in result.stderr
    result = cli("replay", "--speed", "nan", trace)
    assert result.returncode == 2 and "--speed must be a positive number" in result.stderr
    result = cli("replay", "--follow", "--speed", "2", trace)
    assert result.returncode == 2 and "cannot be combined" in result.stderr


def test_not_a_regular_file(cli, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = cli("replay", str(fifo))
    assert result.returncode == 2 and "not a regular file" in result.stderr


def test_needs_a_terminal(cli):
    result = cli("replay", str(SAMPLES / "clean_pass.jsonl"))  # stdin/stderr are pipes here
    assert result.returncode == 2 and "needs a terminal" in result.stderr


def test_follow_may_wait_for_a_file_that_does_not_exist_yet(cli, tmp_path):
    result = cli("replay", "--follow", str(tmp_path / "later.jsonl"))
    assert "no such file" not in result.stderr and "needs a terminal" in result.stderr
    result = cli("replay", "--follow", str(tmp_path / "no" / "such" / "dir" / "later.jsonl"))
    assert result.returncode == 2 and "no such file or directory" in result.stderr
