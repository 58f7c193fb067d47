"""Bad arguments are one line and exit 2, never a hang, a traceback or "internal error": FIFOs and
devices where a trace is expected, and unusable ``run`` options."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from .conftest import SAMPLES, run_cli


def _one_line_usage_error(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_check_refuses_a_fifo_and_a_device_instead_of_blocking(tmp_path):
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    _one_line_usage_error(run_cli("check", str(fifo), timeout=60), "FIFO", "not a regular file")
    _one_line_usage_error(run_cli("check", "/dev/zero", timeout=60), "character device")


def test_check_skips_a_fifo_inside_a_folder_and_says_so(tmp_path):
    shutil.copy(SAMPLES / "clean_pass.jsonl", tmp_path / "good.jsonl")
    os.mkfifo(tmp_path / "stuck.jsonl")
    done = run_cli("check", str(tmp_path), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "good.jsonl" in done.stdout and "1 trace checked" in done.stdout
    assert "skipped" in done.stderr and "stuck.jsonl" in done.stderr and "FIFO" in done.stderr


def test_the_fleet_index_skips_a_fifo_without_opening_it(tmp_path):
    from smoldata_tui.fleet.index import scan
    from smoldata_tui.fleet.work import summarize_episode

    shutil.copy(SAMPLES / "clean_pass.jsonl", tmp_path / "good.jsonl")
    os.mkfifo(tmp_path / "stuck.jsonl")
    rows: list = []
    reader = threading.Thread(target=lambda: rows.extend(summarize_episode(f.path) for f in scan(tmp_path)),
                              daemon=True)  # fmt: skip
    reader.start()
    reader.join(30)
    assert not reader.is_alive(), "reading the folder blocked on the FIFO"
    assert [Path(row.path).name for row in rows] == ["good.jsonl"]
    assert rows[0].accepted


RUN = ["run", "--task", "sales-top-region", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--headless"]


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "-inf"])
def test_run_refuses_a_timeout_that_is_not_a_positive_number(tmp_path, value):
    _one_line_usage_error(run_cli(*RUN, f"--timeout={value}", "--save", str(tmp_path / "runs")), "--timeout")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_run_refuses_an_unusable_save_folder(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    _one_line_usage_error(run_cli(*RUN, "--save", str(a_file)), "--save", "not a directory")
    _one_line_usage_error(run_cli(*RUN, "--save", "/proc/self/no-such-dir"), "--save", "cannot write")
    if os.geteuid() != 0:  # root writes anywhere: a read-only folder proves nothing then
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        _one_line_usage_error(run_cli(*RUN, "--save", str(locked)), "--save", "cannot write")


@pytest.mark.parametrize("task", ["../outside/sales-top-region", "ABSOLUTE", "sales-top-region/../sales-top-region",
                                  ".", ".."])  # fmt: skip
def test_run_refuses_a_task_that_is_a_path(tmp_path, task):
    from smoldata_tui.tasks import default_task_root

    # A real task outside the task set: a path would reach it.
    for folder in ("tasks", "outside"):
        shutil.copytree(default_task_root() / "sales-top-region", tmp_path / folder / "sales-top-region")
    task = str(tmp_path / "outside" / "sales-top-region") if task == "ABSOLUTE" else task
    args = [*RUN[:2], task, *RUN[3:], "--tasks", str(tmp_path / "tasks"), "--save", str(tmp_path / "runs")]
    _one_line_usage_error(run_cli(*args), "--task", "not a path")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
