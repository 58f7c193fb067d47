"""Headless runs stop at once whatever they are doing: SIGTERM while ``pull_bucket.py`` or the
grader runs, a reader of stdout that goes away (``| head -1``); a FIFO in a task's input is refused
instead of hanging the run. The stand-in OpenCode (these tests are about our exits, not OpenCode's),
a real bubblewrap sandbox, real graders."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smoldata_tui.tasks import default_task_root

from .conftest import SAMPLES
from .test_episode_local import _sleeping_recording, processes_matching, sandbox_dirs
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_live_exits import AGENT_START_S, STOP_S, _wait_for


class Headless:
    """``smoldata-tui run --headless`` in the background, its stderr collected line by line."""

    def __init__(self, tmp_path: Path, task: str, recording: Path | None, *, tasks: Path | None = None,
                 stdout=subprocess.DEVNULL, endpoint: tuple[str, ...] = ()) -> None:  # fmt: skip
        """The replay model of ``recording``, or with none the ``endpoint`` options (``--model``…)."""
        self.runs = tmp_path / "runs"
        model = ["--model", f"replay:{recording}"] if recording is not None else list(endpoint)
        args = ["run", "--task", task, *model, "--save", str(self.runs), "--headless"]
        if tasks is not None:
            args += ["--tasks", str(tasks)]
        self.process = subprocess.Popen([sys.executable, "-m", "smoldata_tui", *args], cwd=tmp_path,
                                        stdout=stdout, stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.stderr))

    def metadata(self) -> dict:
        [path] = self.runs.glob("*/run.meta.json")
        return json.loads(path.read_text())

    def finish(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()


def _task_copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(default_task_root() / name, root / name)
    return root


@pytest.mark.parametrize(("signum", "reason", "status"), [(signal.SIGTERM, "SIGTERM", 1), (signal.SIGINT, "SIGINT (Ctrl+C)", 130)])
def test_a_signal_while_pull_bucket_runs_stops_it_at_once(tmp_path, standin_sandboxes, signum, reason, status):  # noqa: F811
    marker = f"6{os.getpid()}{signum}"  # `sleep 6<pid>`: ours alone among the host's processes
    tasks = _task_copy(tmp_path, "sensor-fault-rate")
    (tasks / "sensor-fault-rate" / "environment" / "pull_bucket.py").write_text(
        f"import subprocess\nsubprocess.run(['sleep', '{marker}'])\n"
    )
    run = Headless(tmp_path, "sensor-fault-rate", SAMPLES / "clean_pass.jsonl", tasks=tasks)
    assert _wait_for(lambda: processes_matching(f"sleep {marker}"), AGENT_START_S), run.stderr
    run.process.send_signal(signum)
    started = time.monotonic()
    assert run.finish(STOP_S) == status, run.stderr
    assert time.monotonic() - started < STOP_S
    assert _wait_for(lambda: not processes_matching(f"sleep {marker}"), 10)
    assert sandbox_dirs(standin_sandboxes) == []
    metadata = run.metadata()
    assert metadata["status"] == "cancelled" and metadata["stop_reason"] == reason, metadata
    assert run.said(f"stopped by {reason}")


def test_sigterm_while_the_grader_runs_stops_it_at_once(tmp_path, standin_sandboxes):  # noqa: F811
    marker = f"7{os.getpid()}"
    tasks = _task_copy(tmp_path, "sales-top-region")
    (tasks / "sales-top-region" / "tests" / "grader.py").write_text(
        f"import subprocess\nsubprocess.run(['sleep', '{marker}'])\n"
    )
    run = Headless(tmp_path, "sales-top-region", SAMPLES / "clean_pass.jsonl", tasks=tasks)
    assert _wait_for(lambda: processes_matching(f"sleep {marker}"), AGENT_START_S), run.stderr
    run.process.send_signal(signal.SIGTERM)
    assert run.finish(STOP_S) == 1, run.stderr
    assert _wait_for(lambda: not processes_matching(f"sleep {marker}"), 10)
    assert sandbox_dirs(standin_sandboxes) == []
    metadata = run.metadata()
    assert metadata["status"] == "cancelled" and metadata["stop_reason"] == "SIGTERM", metadata
    assert metadata["grade"] is None


def test_a_fifo_in_the_task_input_is_refused_not_waited_on(tmp_path, standin_sandboxes):  # noqa: F811
    tasks = _task_copy(tmp_path, "sales-top-region")
    os.mkfifo(tasks / "sales-top-region" / "environment" / "input" / "more.csv")
    run = Headless(tmp_path, "sales-top-region", SAMPLES / "clean_pass.jsonl", tasks=tasks)
    assert run.finish(AGENT_START_S) == 1, run.stderr
    assert run.said("more.csv") and run.said("FIFO") and run.said("only regular files can be staged"), run.stderr
    assert run.metadata()["status"] == "error"
    assert sandbox_dirs(standin_sandboxes) == []


def test_a_reader_that_goes_away_stops_the_episode_and_fails_the_run(tmp_path, standin_sandboxes):  # noqa: F811
    marker = f"head-closed-{os.getpid()}"
    run = Headless(tmp_path, "sales-top-region", _sleeping_recording(tmp_path, marker), stdout=subprocess.PIPE)
    first = run.process.stdout.readline()  # what `| head -1` reads before it exits
    assert first.strip(), run.stderr
    assert _wait_for(lambda: processes_matching(marker), AGENT_START_S)
    run.process.stdout.close()
    assert run.finish(STOP_S) == 1, run.stderr
    assert not processes_matching(marker)
    assert sandbox_dirs(standin_sandboxes) == []
    metadata = run.metadata()
    assert metadata["status"] == "cancelled" and "stdout closed" in metadata["stop_reason"], metadata
