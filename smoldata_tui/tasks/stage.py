"""Put a task's data into a sandbox, as the environment's ``stage_task`` does.

Works with any object that has the opencode_env SandboxHandle methods it needs
(``exec``, ``write_text``). Only environment/ is ever read for upload: tests/ (the grader,
which knows the answer) and solution/ never enter the sandbox.

- With environment/pull_bucket.py: it and the other environment/ files outside input/
  go to a scratch folder in the sandbox, where ``python3 pull_bucket.py`` runs with the
  resolved ``[environment.env]`` (the scratch folder is removed afterwards).
- Otherwise environment/input/** is uploaded to /home/user/input/**.
Either way /home/user/input must end up non-empty.
"""

from __future__ import annotations

import base64
import os
import shlex
import threading
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from smoldata_tui.sandbox.protocol import exec_repeatable
from smoldata_tui.tasks.cancellable import Cancelled, call_unless_cancelled
from smoldata_tui.tasks.envvars import resolve_environment_env, secrets_of
from smoldata_tui.tasks.errors import StagingError, TaskError
from smoldata_tui.tasks.model import PULL_BUCKET, SANDBOX_INPUT_DIR, Task
from smoldata_tui.tasks.output import safe_tail
from smoldata_tui.trace.file_kind import NotARegularFile, read_regular

STAGING_DIR = "/tmp/smoldata-stage"  # pull_bucket.py's scratch folder; also holds base64 uploads
DEFAULT_PULL_TIMEOUT_S = 600.0  # a real bucket download can be slow
COMMAND_TIMEOUT_S = 120.0
OUTPUT_TAIL_CHARS = 1500
TIMEOUT_EXIT = 124  # what `timeout(1)` reports for a command that ran out of time

Progress = Callable[[str], None]


def _ignore(message: str) -> None:
    pass


def _run(
    sandbox: Any,
    command: str,
    *,
    failure: tuple[Path, str],
    secrets: Mapping[str, str],
    timeout: float = COMMAND_TIMEOUT_S,
    envs: dict[str, str] | None = None,
    cwd: str | None = None,
    cancel: threading.Event | None = None,
    repeatable: bool = False,
) -> str:
    """Run ``command`` in the sandbox; a non-zero exit is a StagingError at ``failure``, a set
    ``cancel`` a StagingError at once (releasing the sandbox then ends the command). ``repeatable``:
    safe to run twice, so a remote backend may repeat it after a lost connection."""
    run = (lambda: exec_repeatable(sandbox, command, envs=envs, cwd=cwd, timeout=timeout)) if repeatable else (
        lambda: sandbox.exec(command, envs=envs, cwd=cwd, timeout=timeout))
    try:
        result = call_unless_cancelled(run, cancel)
    except Cancelled:
        raise StagingError(failure[0], f"{failure[1]} stopped: the episode was cancelled") from None
    if result.exit_code == 0:
        return result.stdout
    path, what = failure
    why = f"exited with status {result.exit_code}" + (" (timed out?)" if result.exit_code == TIMEOUT_EXIT else "")
    output = safe_tail(result.stderr or result.stdout or "", secrets, OUTPUT_TAIL_CHARS)
    raise StagingError(path, f"{what} {why} in the sandbox" + (f":\n{output}" if output else " (no output)"))


def _as_text(data: bytes) -> str | None:
    """The file as text when write_text can carry it unchanged, else None."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


def _upload(sandbox: Any, source: Path, destination: str, secrets: Mapping[str, str]) -> None:
    try:
        data = read_regular(source)  # a FIFO or a device in input/ would block or never end
    except NotARegularFile as exc:
        raise TaskError(source, f"cannot stage {exc.kind}: only regular files can be staged") from None
    except OSError as exc:
        raise TaskError(source, f"cannot read: {exc.strerror or exc}") from None
    text = _as_text(data)
    if text is not None:
        sandbox.write_text(destination, text)
        return
    # The protocol uploads only text: send base64 and decode it inside the sandbox.
    encoded = f"{STAGING_DIR}/upload.b64"
    sandbox.write_text(encoded, base64.b64encode(data).decode("ascii"))
    parent = str(PurePosixPath(destination).parent)
    _run(
        sandbox,
        f"mkdir -p {shlex.quote(parent)} && base64 -d {shlex.quote(encoded)} > {shlex.quote(destination)}"
        f" && rm -f {shlex.quote(encoded)}",
        failure=(source, "decoding the uploaded file"),
        secrets=secrets,
    )


def _upload_bundled(sandbox: Any, task: Task, say: Progress, secrets: Mapping[str, str]) -> None:
    say(f"uploading {len(task.bundled_input)} input file(s) to {SANDBOX_INPUT_DIR}")
    for relative in task.bundled_input:
        _upload(sandbox, task.input_dir / relative, f"{SANDBOX_INPUT_DIR}/{relative}", secrets)


def _pull_bucket(
    sandbox: Any, task: Task, env: dict[str, str], say: Progress, secrets: Mapping[str, str], timeout: float,
    cancel: threading.Event | None,
) -> None:
    workdir = f"{STAGING_DIR}/environment"
    say(f"uploading {PULL_BUCKET} and {len(task.support_files) - 1} other environment file(s)")
    for relative in task.support_files:
        _upload(sandbox, task.environment_dir / relative, f"{workdir}/{relative}", secrets)
    # Names only: the values may be tokens.
    say(f"running {PULL_BUCKET} in the sandbox" + (f" with {', '.join(sorted(env))} set" if env else ""))
    _run(
        sandbox,
        f"python3 {PULL_BUCKET}",
        failure=(task.environment_dir / PULL_BUCKET, PULL_BUCKET),
        secrets=secrets,
        timeout=timeout,
        envs=env or None,
        cwd=workdir,
        cancel=cancel,
    )


def _count_input_files(sandbox: Any, task: Task, secrets: Mapping[str, str]) -> int:
    source = task.environment_dir / PULL_BUCKET if task.has_pull_bucket else task.input_dir
    output = _run(
        sandbox,
        f"find {shlex.quote(SANDBOX_INPUT_DIR)} -type f | wc -l",
        failure=(source, f"listing {SANDBOX_INPUT_DIR}"),
        secrets=secrets,
        repeatable=True,
    )
    try:
        count = int(output.strip())
    except ValueError:
        raise StagingError(source, f"could not count the files in {SANDBOX_INPUT_DIR} (find printed no number)") from None
    if count == 0:
        raise StagingError(source, f"staging left {SANDBOX_INPUT_DIR} empty in the sandbox; the agent would have no data")
    return count


def stage_task(
    sandbox: Any,
    task: Task,
    *,
    environ: Mapping[str, str] = os.environ,
    progress: Progress | None = None,
    pull_timeout_s: float = DEFAULT_PULL_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> int:
    """Stage ``task``'s data into ``sandbox``; return how many files /home/user/input holds.

    Raises UnsetVariableError before touching the sandbox when ``[environment.env]``
    references an unset host variable, and StagingError when a step fails or the input
    ends up empty (or ``cancel`` is set while ``pull_bucket.py`` runs). ``progress`` receives one
    line per step (never a variable's value).
    """
    env = resolve_environment_env(task, environ)
    secrets = secrets_of(task.environment_env, environ)
    say = progress or _ignore
    _run(
        sandbox,
        f"rm -rf {STAGING_DIR} && mkdir -p {STAGING_DIR} {shlex.quote(SANDBOX_INPUT_DIR)}",
        failure=(task.folder, f"preparing {SANDBOX_INPUT_DIR}"),
        secrets=secrets,
        repeatable=True,
    )
    try:
        if task.has_pull_bucket:
            _pull_bucket(sandbox, task, env, say, secrets, pull_timeout_s, cancel)
        else:
            _upload_bundled(sandbox, task, say, secrets)
    finally:
        try:
            exec_repeatable(sandbox, f"rm -rf {STAGING_DIR}", timeout=COMMAND_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - cleanup must not hide the error that got us here
            pass
    count = _count_input_files(sandbox, task, secrets)
    say(f"{SANDBOX_INPUT_DIR} ready: {count} file(s)")
    return count
