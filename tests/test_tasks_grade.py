"""Grading on the host with real grader subprocesses: the answer, the env, and every grader failure."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from smoldata_tui.tasks import GradeResult, grade_answer, load_task, run_grader, to_verify_result

from .test_tasks_load import write_task
from .test_tasks_localdir import LocalDirSandbox, sandbox  # noqa: F401 - the fixture

HOST = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/root"}


def grader_task(tmp_path: Path, grader: str, toml: str = "") -> object:
    return load_task(write_task(tmp_path, "graded", toml=toml, grader=grader))


def test_the_answer_file_goes_to_the_grader_and_absent_means_empty(tmp_path, sandbox):
    task = load_task(write_task(tmp_path))
    missing = grade_answer(sandbox, task, environ=HOST)
    assert (missing.env_reward, missing.correctness, missing.grader_error) == (0.0, 0, None)
    assert missing.report == {"correctness": 0, "expected": "42", "got": ""}
    sandbox.write_text("/workdir/answer.txt", "42\n")
    right = grade_answer(sandbox, task, environ=HOST)
    assert (right.env_reward, right.correctness, right.failed) == (1.0, 1, False)
    assert right.grader_output == '{"correctness": 1, "expected": "42", "got": "42"}\n'
    assert 0 < right.duration_s < 10


def test_the_grader_gets_verifier_env_in_a_minimal_environment_and_its_output_is_redacted(tmp_path):
    grader = """\
import json, os, sys
print("debug: key is", os.environ["KEY"])
print(json.dumps({"correctness": True, "env": sorted(os.environ), "key_ok": os.environ["KEY"] == "sk-live-0123456789abcdef",
                  "echo": ["key", os.environ["KEY"]],
                  "tolerance": os.environ["TOLERANCE"], "cwd": os.getcwd(), "answer": sys.stdin.read()}))
"""
    toml = '[verifier.env]\nKEY = "${GRADER_KEY}"\nTOLERANCE = "0.5"\n'
    task = grader_task(tmp_path, grader, toml)
    environ = {**HOST, "GRADER_KEY": "sk-live-0123456789abcdef", "OPENAI_API_KEY": "sk-other-host-secret"}
    result = run_grader(task, "ünïcode answer\n", environ=environ)
    assert result.correctness == 1 and result.env_reward == 1.0
    report = result.report
    assert report["key_ok"] and report["tolerance"] == "0.5" and report["answer"] == "ünïcode answer\n"
    assert report["cwd"] == str(task.folder)
    assert "OPENAI_API_KEY" not in report["env"] and "GRADER_KEY" not in report["env"]
    assert set(report["env"]) <= {"PATH", "HOME", "KEY", "TOLERANCE", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "LC_CTYPE"}
    assert report["echo"] == ["key", "[$GRADER_KEY]"]
    assert "debug: key is [$GRADER_KEY]" in result.grader_output
    assert "sk-live-0123456789abcdef" not in result.grader_output


FAILING = {
    "crash": ("import sys\nprint('Traceback: boom', file=sys.stderr)\nsys.exit(1)\n", "grader exited with status 1:\nTraceback: boom"),
    "non-binary": ('print(\'{"correctness": 0.5}\')\n', "grader's correctness must be 0 or 1 (or true/false), got 0.5"),
    "string": ('print(\'{"correctness": "1"}\')\n', "grader's correctness must be 0 or 1 (or true/false), got \"1\""),
    "no correctness": ('print(\'{"score": 1}\')\n', "grader printed no correctness (it must be 0 or 1, or true/false)"),
    "no JSON": ("print('correct!')\n", "grader printed no JSON object"),
    "exit 1 after a verdict": ('import sys\nprint(\'{"correctness": 1}\')\nsys.exit(2)\n', "grader exited with status 2"),
}


@pytest.mark.parametrize("case", list(FAILING))
def test_a_broken_grader_is_a_grader_failure_not_a_zero(tmp_path, case):
    grader, problem = FAILING[case]
    result = run_grader(grader_task(tmp_path, grader), "42", environ=HOST)
    assert result.failed and result.env_reward is None and result.correctness is None
    assert result.grader_error.startswith(problem)


def test_the_last_json_object_line_decides_and_true_counts_as_1(tmp_path):
    grader = 'print(\'{"correctness": 0}\')\nprint("{not json")\nprint(\'{"correctness": true, "note": "final"}\')\nprint("bye")\n'
    result = run_grader(grader_task(tmp_path, grader), "", environ=HOST)
    assert (result.env_reward, result.correctness, result.report) == (1.0, 1, {"correctness": True, "note": "final"})


def _gone(pid: int, within_s: float) -> bool:
    """True once the process has exited (a zombie counts: nothing reaps orphans in some containers)."""
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if stat.read_text().rsplit(") ", 1)[1].startswith("Z"):
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_hanging_grader_times_out_and_its_children_die_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    grader = f"""\
import subprocess, time
child = subprocess.Popen(["sleep", "60"])
open({str(pid_file)!r}, "w").write(str(child.pid))
time.sleep(60)
"""
    started = time.monotonic()
    result = run_grader(grader_task(tmp_path, grader), "", environ=HOST, timeout=2.0)
    assert time.monotonic() - started < 15
    assert result.failed and result.grader_error == "grader timed out after 2 s"
    assert pid_file.exists(), "the grader did not start its child within the timeout"
    assert _gone(int(pid_file.read_text()), within_s=5)


def test_an_unset_verifier_variable_and_a_dead_sandbox_are_reported_not_raised(tmp_path):
    task = grader_task(tmp_path, "raise SystemExit('must not run')\n", '[verifier.env]\nKEY = "${GRADER_KEY}"\n')
    unset = run_grader(task, "42", environ=HOST)
    assert unset.failed and unset.grader_error.startswith("grader not run: [verifier.env] needs $GRADER_KEY")

    class DeadSandbox:
        def exists(self, path):
            raise ConnectionError("sandbox is gone")

    dead = grade_answer(DeadSandbox(), task, environ=HOST)
    assert dead.failed and dead.grader_error == (
        "could not read /workdir/answer.txt from the sandbox: ConnectionError: sandbox is gone"
    )


def test_to_verify_result_is_the_environment_reward():
    from openenv.core.harness import VerifyResult

    passed = to_verify_result(GradeResult(1.0, 1, "{}", None, 0.25))
    assert isinstance(passed, VerifyResult)
    assert (passed.env_reward, passed.done, passed.metrics) == (1.0, True, {"correctness": 1, "grader_duration_s": 0.25})
    failed = to_verify_result(GradeResult(None, None, "", "grader exited with status 1", 0.1))
    assert failed.env_reward is None and failed.done is True
    assert failed.metrics["grader_error"] == "grader exited with status 1"
