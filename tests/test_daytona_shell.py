"""The bash lines the Daytona sandbox runs, and how their replies are read: a reply that is not
what the script prints is refused, not half-parsed; and the loop that runs the SDK does not spin
on a coroutine's own TimeoutError."""

from __future__ import annotations

import base64
import subprocess
import time

import pytest

from smoldata_tui.sandbox.daytona import shell
from smoldata_tui.sandbox.daytona.bridge import LoopThread


def run(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)


def test_exec_script_separates_stdout_stderr_and_exit_code_for_awkward_commands(tmp_path):
    folder = tmp_path / "it's a $HOME dir"
    folder.mkdir()
    script = shell.exec_script("printf 'no newline'; echo 'to stderr' >&2; exit 300", envs={"V": "a'b $X"},
                               cwd=str(folder), timeout=10)  # fmt: skip
    done = run(script.command)
    assert script.parse(done.stdout) == (44, "no newline", "to stderr\n")  # 300 & 255, as bash reports it
    env = shell.exec_script("printf %s \"$V\"; pwd", envs={"V": "a'b $X"}, cwd=str(folder), timeout=10)
    assert env.parse(run(env.command).stdout) == (0, f"a'b $X{folder}\n", "")


def test_read_appended_returns_only_new_bytes_and_refuses_garbage(tmp_path):
    log = tmp_path / "agent log.jsonl"
    log.write_bytes(b"line one\nline two\n\xff\x00binary")
    reply = run(shell.read_appended(str(log), 9, 1 << 20, 0)).stdout
    assert shell.parse_appended(reply) == (log.stat().st_size, b"line two\n\xff\x00binary")
    assert shell.parse_appended(run(shell.read_appended(str(tmp_path / "none"), 0, 100, 0)).stdout) == (-1, b"")
    # bash's own warnings on a broken image land before the answer: the last line is what counts
    assert shell.parse_appended("bash: warning: setlocale: LC_ALL\n5:" + base64.b64encode(b"hello").decode()) == (5, b"hello")
    for garbage in ("bash: oops", "12:not*base64", "", "12:abc"):
        assert shell.parse_appended(garbage) is None


def test_read_appended_waits_in_the_sandbox_for_the_log_to_grow(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"old\n")
    writer = subprocess.Popen(["bash", "-c", f"sleep 0.3; printf 'new\\n' >> '{log}'"])
    started = time.monotonic()
    reply = run(shell.read_appended(str(log), 4, 100, 30.0)).stdout
    writer.wait()
    assert shell.parse_appended(reply) == (8, b"new\n")
    assert 0.25 < time.monotonic() - started < 15  # returned when the line came, not at the 30 s deadline


def test_the_loop_thread_raises_a_coroutines_own_timeout_error_at_once():
    async def times_out():
        raise TimeoutError("the coroutine's own")

    started = time.monotonic()
    with pytest.raises(TimeoutError, match="the coroutine's own"):
        LoopThread().run(times_out())
    assert time.monotonic() - started < 10
