"""The shell lines the Daytona sandbox runs for the protocol's operations.

Daytona's exec returns stdout and stderr combined and loses arbitrary bytes in JSON text, so each
operation brings back what it needs in a form that survives: stderr and the exit code after a random
marker, file bytes in base64. All of it is bash: Daytona runs the command with whichever of zsh, bash
or sh the image has first, so every line is wrapped in ``bash -c``.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
import shlex
from dataclasses import dataclass

JOB_MARKER = "SMOLDATA_JOB"
JOBS_DIR = "/tmp/.smoldata-jobs"
POLL_S = 0.05  # how often the in-sandbox long poll looks at the log's size
KILL_GRACE_S = 2.0


def bash(script: str) -> str:
    """``script`` under bash; bash's own complaints (an image's bad locale: "setlocale: ...") are
    dropped, since Daytona would mix them into the output we parse. Commands that report stderr
    capture it themselves. Stdin is /dev/null for everything we run: Daytona's daemon gives a
    session command the session shell's stdin, a pipe it never closes, and ``opencode run`` reads
    stdin to its end before it starts, so the agent (or any job reading stdin) would wait forever."""
    return f"bash -c {shlex.quote(script)} 2>/dev/null </dev/null"


def _env_words(envs: dict[str, str] | None) -> str:
    return " ".join(shlex.quote(f"{name}={value}") for name, value in (envs or {}).items())


@dataclass
class ExecScript:
    """A command whose stdout, stderr and exit code come back distinguishable."""

    command: str
    marker: str

    def parse(self, combined: str) -> tuple[int, str, str] | None:
        """(exit code, stdout, stderr), or None when the reply does not carry our markers."""
        head, sep, code = combined.rpartition(self.marker)
        stdout, sep2, encoded = head.rpartition(self.marker)
        if not sep or not sep2:
            return None
        try:
            stderr = base64.b64decode(encoded.strip()).decode("utf-8", "replace")
            return int(code.strip()), stdout, stderr
        except ValueError:
            return None


def exec_script(cmd: str, *, envs: dict[str, str] | None, cwd: str | None, timeout: float | None) -> ExecScript:
    """``cmd`` under bash, in ``cwd`` with ``envs``, killed after ``timeout`` seconds (exit 124, as
    ``timeout(1)`` and the protocol say), with stdin from /dev/null as on the local backend (see
    :func:`bash`)."""
    marker = f"@@smoldata-{secrets.token_hex(8)}@@"
    err = f"/tmp/.smoldata-err-{marker.strip('@')}"
    run = f"env {_env_words(envs)} bash -c {shlex.quote(cmd)}" if envs else f"bash -c {shlex.quote(cmd)}"
    if timeout is not None:
        run = f"timeout -k 5 {max(1, round(timeout))} {run}"
    if cwd:
        run = f"cd {shlex.quote(cwd)} && {run}"
    script = (
        f"{{ {run} ; }} 2>{err}; rc=$?; printf %s {marker}; base64 -w0 {err} 2>/dev/null; "
        f"rm -f {err}; printf '%s%d' {marker} $rc"
    )
    return ExecScript(bash(script), marker)


def job_command(job_id: str, cmd: str, *, envs: dict[str, str] | None, cwd: str | None) -> str:
    """A background job: every process it starts carries ``SMOLDATA_JOB=<id>`` in its environment
    (even ones that leave its process group or session), so :func:`kill_job` finds them all.
    Its stdin is /dev/null (see :func:`bash`)."""
    env = _env_words({JOB_MARKER: job_id, **(envs or {})})
    run = f"env {env} bash -c {shlex.quote(cmd)}"
    if cwd:
        run = f"cd {shlex.quote(cwd)} && {run}"
    return bash(f"mkdir -p {JOBS_DIR} && echo $$ > {JOBS_DIR}/{job_id}.pid && {run}")


def job_pid(job_id: str) -> str:
    return bash(f"cat {JOBS_DIR}/{job_id}.pid 2>/dev/null")


def kill_job(job_id: str, grace_s: float = KILL_GRACE_S) -> str:
    """TERM every process of the job, then KILL what is left after ``grace_s`` (OpenCode can swallow
    the first TERM)."""
    rounds = max(1, round(grace_s / 0.25))  # each look forks per process: look a few times only
    script = (
        f"m={shlex.quote(f'{JOB_MARKER}={job_id}')}; "
        "pids() { for e in /proc/[0-9]*/environ; do p=${e#/proc/}; p=${p%/environ}; "
        '[ "$p" = $$ ] && continue; tr "\\0" "\\n" 2>/dev/null < "$e" | grep -qxF "$m" && echo "$p"; done; }; '
        'left=$(pids); [ -z "$left" ] && exit 0; kill -TERM $left 2>/dev/null; '
        f"i=0; while [ $i -lt {rounds} ]; do sleep 0.25; left=$(pids); "
        '[ -z "$left" ] && exit 0; i=$((i+1)); done; kill -KILL $left 2>/dev/null; exit 0'
    )
    return bash(script)


def read_appended(path: str, offset: int, limit: int, wait_s: float) -> str:
    """Prints ``<size>:<base64 of up to limit bytes from offset>``. Waits in the sandbox up to
    ``wait_s`` for the file to grow past ``offset`` first, so an idle log costs one request per
    ``wait_s`` and a new line is seen within :data:`POLL_S`. Size -1: no such file."""
    rounds = max(0, round(wait_s / POLL_S))
    f = shlex.quote(path)
    script = (
        f"i=0; while :; do s=$(stat -c %s {f} 2>/dev/null || echo -1); "
        f'[ "$s" -gt {offset} ] && break; [ $i -ge {rounds} ] && break; i=$((i+1)); sleep {POLL_S}; done; '
        f'printf "%s:" "$s"; [ "$s" -gt {offset} ] && tail -c +{offset + 1} {f} 2>/dev/null | head -c {limit} | base64 -w0; exit 0'
    )
    return bash(script)


_APPENDED = re.compile(r"(-?\d+):([A-Za-z0-9+/=]*)")


def parse_appended(reply: str) -> tuple[int, bytes] | None:
    """(size of the log, the new bytes), or None when the reply is not what the script prints."""
    lines = reply.strip().splitlines()
    found = _APPENDED.fullmatch(lines[-1].strip()) if lines else None
    if found is None:
        return None
    try:
        return int(found.group(1)), base64.b64decode(found.group(2), validate=True)
    except (ValueError, binascii.Error):
        return None


def read_range(path: str, offset: int, limit: int | None) -> str:
    f = shlex.quote(path)
    tail = f"tail -c +{offset + 1} {f}" + (f" | head -c {limit}" if limit is not None else "")
    return bash(f"test -f {f} || exit 3; {tail} | base64 -w0")


def file_size(path: str) -> str:
    return bash(f"stat -c %s {shlex.quote(path)} 2>/dev/null || echo -1")


def parse_number(text: str) -> int | None:
    """What :func:`file_size` prints, or None for a reply that is not a whole number."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else None


def exists(path: str) -> str:
    return bash(f"test -e {shlex.quote(path)} && echo yes || echo no")


def make_parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0] or "/"
    return bash(f"mkdir -p {shlex.quote(parent)}")
