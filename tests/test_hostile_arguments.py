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


@pytest.mark.parametrize("args, words", [
    (["--task", ""], ["--task is empty"]),
    (["--task", "  "], ["--task is empty"]),
    (["--task", "sales-top-region", "--task", ""], ["--task is empty"]),  # a batch
    (["--task", "sales-top-region", "--tasks", ""], ["--tasks is empty"]),
    (["--task", "sales-top-region", "--save", ""], ["--save is empty"]),
    (["--task", "sales-top-region", "--base-url", " "], ["--base-url is empty"]),
    (["--task", "sales-top-region", "--opencode-bin", ""], ["--opencode-bin is empty"]),
    (["--task", "sales-top-region", "--opencode-version", ""], ["--opencode-version is empty"]),
    (["--task", "sales-top-region", "--opencode-version", "latest"], ["--opencode-version", "not an exact"]),
    (["--task", "sales-top-region", "--daytona-cpu", "2"], ["--daytona-cpu only applies with --backend daytona"]),
], ids=["task", "task-blank", "batch-task", "tasks", "save", "base-url", "opencode-bin", "opencode-version",
        "opencode-version-shape", "daytona-option-locally"])  # fmt: skip
def test_run_refuses_empty_and_unusable_option_values(tmp_path, args, words):
    # The options' last value counts: the --save case's empty value comes after this one.
    done = run_cli("run", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--headless", "--save",
                   str(tmp_path / "runs"), *args)  # fmt: skip
    _one_line_usage_error(done, *words)
    assert not (tmp_path / "runs").exists()


DAYTONA = [*RUN, "--backend", "daytona"]


@pytest.mark.parametrize("args, words", [
    (["--daytona-cpu", "0"], ["--daytona-cpu must be a positive whole number, not '0'"]),
    (["--daytona-memory", "1.5"], ["--daytona-memory must be a positive whole number, not '1.5'"]),
    (["--daytona-disk", "-5"], ["--daytona-disk must be a positive whole number, not '-5'"]),
    (["--daytona-disk", "lots"], ["--daytona-disk must be a positive whole number"]),
    (["--daytona-target", ""], ["--daytona-target is empty"]),
    (["--daytona-snapshot", " "], ["--daytona-snapshot is empty"]),
    (["--daytona-snapshot", "s", "--daytona-cpu", "2"], ["--daytona-cpu", "snapshot 's' has the snapshot's resources"]),
], ids=["cpu-zero", "memory-fraction", "disk-negative", "disk-word", "target-empty", "snapshot-blank",
        "resources-with-snapshot"])  # fmt: skip
def test_run_refuses_unusable_daytona_options(tmp_path, monkeypatch, args, words):
    monkeypatch.setenv("DAYTONA_API_KEY", "a-key")
    _one_line_usage_error(run_cli(*DAYTONA, *args, "--save", str(tmp_path / "runs")), *words)
    assert not (tmp_path / "runs").exists()


def test_run_refuses_a_daytona_api_url_with_credentials_and_does_not_show_them(tmp_path, monkeypatch):
    monkeypatch.setenv("DAYTONA_API_KEY", "a-key")
    monkeypatch.setenv("DAYTONA_API_URL", "https://someone:hunter2@daytona.example/api")
    done = run_cli(*DAYTONA, "--save", str(tmp_path / "runs"))
    _one_line_usage_error(done, "https://***@daytona.example/api (DAYTONA_API_URL) carries credentials")
    assert "hunter2" not in done.stderr and "someone" not in done.stderr


@pytest.mark.parametrize("args", [
    ["--task", "sales-top-region", "--headless"],  # one episode
    ["--task", "sales-top-region"],  # one episode on the screen: refused before any screen
    ["--task", "sales-top-region", "--attempts", "2", "--headless"],  # a batch
], ids=["one-headless", "one-screen", "batch"])  # fmt: skip
def test_run_refuses_a_concurrency_below_one_however_many_episodes(tmp_path, args):
    done = run_cli("run", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--save", str(tmp_path / "runs"),
                   "--concurrency", "-1", *args)  # fmt: skip
    _one_line_usage_error(done, "--concurrency must be at least 1, not -1")
    assert not (tmp_path / "runs").exists()


def test_a_task_set_before_the_command_is_used_or_refused_never_ignored(tmp_path):
    """``smoldata-tui --tasks DIR tasks`` lists DIR (it listed the samples without a word)."""
    missing = tmp_path / "no-such-tasks"
    done = run_cli("--tasks", str(missing), "tasks", timeout=60)
    assert done.returncode == 2 and str(missing) in done.stderr, done.stderr
    shutil.copytree(SAMPLES.parent / "smoldata_tui" / "sample_tasks" / "sales-top-region", tmp_path / "mine" / "sales-top-region")
    listed = run_cli("--tasks", str(tmp_path / "mine"), "tasks", "--json", timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert [line.count('"sales-top-region"') for line in listed.stdout.splitlines()] == [1]
    for argv, words in ((["--tasks", str(tmp_path), "check", str(SAMPLES / "clean_pass.jsonl")], "`check` takes none"),
                        (["--tasks", str(tmp_path), "tasks", "--tasks", str(missing)], "two task sets")):  # fmt: skip
        refused = run_cli(*argv, timeout=60)
        assert refused.returncode == 2 and words in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
