"""Grade an answer on the host, as the environment's ``grade_answer`` does.

``python3 tests/grader.py --json`` (the interpreter running smoldata-tui) runs in the task
folder with the agent's answer (/workdir/answer.txt, "" when absent) on stdin and
``[verifier.env]`` in a minimal environment, so the host's other variables (API keys)
never reach a grader. The grader's last JSON-object line must hold a binary
``correctness``. A crash, a timeout, or a non-binary value is a grader failure
(``env_reward`` None), never a silent 0.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from smoldata_tui.tasks.cancellable import kill_group_when
from smoldata_tui.masking import SecretScrubber, redact_json, redact_secrets
from smoldata_tui.tasks.envvars import resolve_verifier_env, secrets_of
from smoldata_tui.tasks.errors import UnsetVariableError
from smoldata_tui.tasks.grader_process import run_bounded
from smoldata_tui.tasks.model import SANDBOX_ANSWER_PATH, Task
from smoldata_tui.tasks.output import keep_tail, safe_tail
from smoldata_tui.trace.text import neutralize

MAX_GRADER_OUTPUT_CHARS = 16_000  # stdout kept for display; the verdict line is at its end
STDERR_TAIL_CHARS = 1_500
# Sizes the agent controls (its answer, hence what a grader echoes), capped on the host:
MAX_ANSWER_BYTES = 1 << 20  # /workdir/answer.txt: larger answers are not graded
MAX_GRADER_STDOUT_BYTES = 1 << 20  # the last MiB of stdout is kept (the verdict line is at its end)
MAX_GRADER_STDERR_BYTES = 64 << 10
# Host variables a Python grader may need to start and decode text; nothing else leaks in.
PASSED_THROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT")


@dataclass(frozen=True)
class GradeResult:
    env_reward: float | None  # 1.0 / 0.0, or None when grading failed
    correctness: int | None
    grader_output: str  # the grader's stdout (its tail), secrets redacted; neutralize before display
    grader_error: str | None  # why grading failed; None when it worked
    duration_s: float
    report: dict[str, Any] | None = None  # the grader's JSON object (expected, got, …)
    # Each cap that was hit: {"cap": name, "limit": bytes, "seen": bytes} (docs/episode-format.md)
    caps_hit: tuple[dict[str, Any], ...] = ()

    @property
    def failed(self) -> bool:
        return self.grader_error is not None


class AnswerTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{SANDBOX_ANSWER_PATH} is {size} bytes, over the {MAX_ANSWER_BYTES}-byte answer cap")
        self.size = size


def cap_hit(name: str, limit: int, seen: int) -> dict[str, Any]:
    return {"cap": name, "limit": limit, "seen": seen}


def read_answer(sandbox: Any, limit: int = MAX_ANSWER_BYTES) -> str:
    """/workdir/answer.txt from the sandbox, or "" when the agent wrote none. Never more than
    ``limit`` bytes are read: a larger answer raises :class:`AnswerTooLarge` (a sparse 1 GiB file
    costs the agent nothing)."""
    if not sandbox.exists(SANDBOX_ANSWER_PATH):
        return ""
    if not callable(getattr(sandbox, "read_bytes", None)):  # a handle with the protocol's read_text only
        text = sandbox.read_text(SANDBOX_ANSWER_PATH)  # its backend decides how much it reads
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise AnswerTooLarge(size)
        return text
    size = sandbox.size(SANDBOX_ANSWER_PATH)
    if size is None:
        return ""
    if size > limit:
        raise AnswerTooLarge(size)
    data = sandbox.read_bytes(SANDBOX_ANSWER_PATH, 0, limit + 1)
    if len(data) > limit:  # it grew between the two calls
        raise AnswerTooLarge(len(data))
    return data.decode("utf-8")  # strict, like the backends' read_text


def grader_environment(task: Task, environ: Mapping[str, str]) -> dict[str, str]:
    env = {name: environ[name] for name in PASSED_THROUGH if name in environ}
    # The grader runs from the package folder: no __pycache__ there; answers may be any Unicode.
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8")
    env.update(resolve_verifier_env(task, environ))
    return env


def _last_json_object(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    try:  # a grader that pretty-prints its one object
        value = json.loads(stdout)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def binary_correctness(value: Any) -> int | None:
    """0 or 1 from 0/1, 0.0/1.0 or false/true; None for anything else."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    return None


def _shown(stdout: str, secrets: Mapping[str, str]) -> str:
    return keep_tail(redact_secrets(stdout, secrets), MAX_GRADER_OUTPUT_CHARS)


def run_grader(
    task: Task, answer: str, *, environ: Mapping[str, str] = os.environ, timeout: float | None = None,
    cancel: Any = None,
    scrub_secrets: Iterable[str] = (),
) -> GradeResult:
    """Grade ``answer`` with the task's grader (no sandbox needed); ``cancel`` (a threading.Event)
    kills it when set. ``scrub_secrets`` (the endpoint's key) are masked in everything the grader
    prints before anything else reads it."""
    started = time.monotonic()
    timeout = task.grader_timeout_s if timeout is None else timeout
    secrets = secrets_of(task.verifier_env, environ)
    caps: list[dict[str, Any]] = []

    def failure(problem: str, stdout: str = "", stderr: str = "", report: dict[str, Any] | None = None) -> GradeResult:
        detail = safe_tail(stderr, secrets, STDERR_TAIL_CHARS)
        message = neutralize(problem) + (f":\n{detail}" if detail else "")
        return GradeResult(None, None, _shown(stdout, secrets), message, time.monotonic() - started, report,
                           tuple(caps))  # fmt: skip

    try:
        env = grader_environment(task, environ)
    except UnsetVariableError as exc:
        return failure(f"grader not run: {exc.problem}")
    try:
        outcome = run_bounded(
            [sys.executable, str(task.grader), "--json"], cwd=str(task.folder), env=env,
            stdin=answer.encode("utf-8", "replace"), timeout=timeout, stdout_cap=MAX_GRADER_STDOUT_BYTES,
            stderr_cap=MAX_GRADER_STDERR_BYTES, scrubber=SecretScrubber(scrub_secrets), cancel=cancel,
        )  # fmt: skip
    except OSError as exc:
        return failure(f"grader could not start: {exc.strerror or exc}")
    code, stdout, stderr = outcome.exit_code, outcome.stdout.decode("utf-8", "replace"), outcome.stderr.decode("utf-8", "replace")
    if outcome.stdout_seen > outcome.stdout_cap:
        caps.append(cap_hit("grader_stdout", outcome.stdout_cap, outcome.stdout_seen))
    if outcome.stderr_seen > outcome.stderr_cap:
        caps.append(cap_hit("grader_stderr", outcome.stderr_cap, outcome.stderr_seen))
    if code is None:
        return failure(f"grader timed out after {timeout:g} s", stdout, stderr)
    if code != 0:
        return failure(f"grader exited with status {code}", stdout, stderr)
    parsed = _last_json_object(stdout)
    if parsed is None:
        return failure("grader printed no JSON object", stdout, stderr)
    report = redact_json(parsed, secrets)  # kept for display and saving, like grader_output
    if "correctness" not in report:
        return failure("grader printed no correctness (it must be 0 or 1, or true/false)", stdout, stderr, report)
    correctness = binary_correctness(report["correctness"])
    if correctness is None:
        shown = json.dumps(report["correctness"])[:60]
        return failure(f"grader's correctness must be 0 or 1 (or true/false), got {shown}", stdout, stderr, report)
    return GradeResult(float(correctness), correctness, _shown(stdout, secrets), None, time.monotonic() - started, report,
                       tuple(caps))  # fmt: skip


def grade_answer(
    sandbox: Any, task: Task, *, environ: Mapping[str, str] = os.environ, timeout: float | None = None,
    cancel: Any = None,
    scrub_secrets: Iterable[str] = (),
) -> GradeResult:
    """Read the agent's answer from ``sandbox`` (at most MAX_ANSWER_BYTES) and grade it on the host."""
    started = time.monotonic()
    try:
        answer = read_answer(sandbox)
    except AnswerTooLarge as exc:  # grading a cut answer could turn a wrong answer into a right one
        return GradeResult(None, None, "", f"not graded: {exc}", time.monotonic() - started,
                           caps_hit=(cap_hit("answer", MAX_ANSWER_BYTES, exc.size),))  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - a dead sandbox is an ungraded episode, not a crash
        problem = neutralize(f"could not read {SANDBOX_ANSWER_PATH} from the sandbox: {type(exc).__name__}: {exc}")
        return GradeResult(None, None, "", SecretScrubber(scrub_secrets).text(problem)[:500], time.monotonic() - started)
    return run_grader(task, answer, environ=environ, timeout=timeout, scrub_secrets=scrub_secrets, cancel=cancel)


def to_verify_result(grade: GradeResult) -> Any:
    """The reward as the environment returns it: ``VerifyResult(env_reward=…, done=True)``."""
    from openenv.core.harness import VerifyResult  # ~6 s to import: only when asked

    metrics: dict[str, Any] = {"correctness": grade.correctness, "grader_duration_s": round(grade.duration_s, 3)}
    if grade.grader_error is not None:
        metrics["grader_error"] = grade.grader_error
    return VerifyResult(env_reward=grade.env_reward, done=True, metrics=metrics)
