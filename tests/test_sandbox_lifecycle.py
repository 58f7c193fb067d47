"""Ending things: background jobs, timeouts, kill() of a whole sandbox, its lifetime limit, and what
happens when the owning interpreter exits or dies. Processes are checked on the host's /proc."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from smoldata_tui.sandbox import LocalSandboxBackend, SandboxClosed, TIMEOUT_EXIT_CODE

from .test_sandbox_support import (  # noqa: F401 - fixtures
    GRACE_S,
    assert_fully_removed,
    backend,
    base_dir,
    marker,
    processes_matching,
    sandbox,
    sleepers,
    wait_for_sleepers,
)

REPO = Path(__file__).resolve().parent.parent
# Children that leave the job's process group and session, a double fork, and one that ignores TERM.
ESCAPING_TREE = "setsid sleep {m} & (sleep {m} &) ; (trap '' TERM; sleep {m}) & sleep {m}"


def test_exec_timeout_kills_the_command_and_returns_124(sandbox):
    started = time.monotonic()
    result = sandbox.exec("echo before; sleep 30; echo after", timeout=0.5)
    assert time.monotonic() - started < 5
    assert result.exit_code == TIMEOUT_EXIT_CODE
    assert result.stdout == "before\n"
    assert "timeout" in result.stderr
    listing = sandbox.exec("ps -eo stat,args").stdout
    assert "sleep 30" not in listing
    assert "defunct" not in listing  # killed cleanly: no zombie left for the host's init to reap
    started = time.monotonic()
    sandbox.kill()
    assert time.monotonic() - started < 10  # not the 30 s sleep


def test_bg_wait_raises_timeout_error_then_kill_ends_the_job(sandbox):
    mark = marker()
    job = sandbox.start_bg(f"echo started; sleep {mark}")
    wait_for_sleepers(mark, 1)
    with pytest.raises(TimeoutError):
        job.wait(timeout=0.2)
    assert job.exit_code is None
    job.kill()
    assert job.wait(timeout=5) in (128 + signal.SIGTERM, 128 + signal.SIGKILL)
    assert sleepers(mark) == []
    assert job.log_path.read_text() == "started\n"
    job.kill()  # idempotent
    assert sandbox.exec("echo alive").stdout == "alive\n"  # the sandbox itself lives on


def test_bg_job_exit_code_and_envs(sandbox):
    job = sandbox.start_bg('test "$KEY" = secret && exit 7', envs={"KEY": "secret"}, cwd="/workdir")
    assert job.wait(timeout=10) == 7
    assert job.exit_code == 7


def test_bg_job_kill_ends_children_that_escaped_its_process_group(sandbox):
    mark = marker()
    job = sandbox.start_bg(ESCAPING_TREE.format(m=mark))
    wait_for_sleepers(mark, 4)
    job.kill()
    assert sleepers(mark) == []
    assert not sandbox.exec("ps -eo args").stdout.count(mark)


def test_kill_ends_every_process_of_the_sandbox_and_removes_its_root(backend):
    mark = marker()
    sb = backend.create()
    root = sb.root
    sb.start_bg(ESCAPING_TREE.format(m=mark))
    sb.exec(ESCAPING_TREE.format(m=mark).replace(f"& sleep {mark}", "&", 1) + " echo left-running")
    wait_for_sleepers(mark, 7)
    started = time.monotonic()
    sb.kill()
    assert time.monotonic() - started < GRACE_S + 5
    assert sleepers(mark) == []
    assert not root.exists()
    assert_fully_removed(sb)


def test_kill_is_idempotent_thread_safe_and_closes_the_handle(sandbox):
    mark = marker()
    sandbox.start_bg(f"sleep {mark}")
    wait_for_sleepers(mark, 1)
    threads = [threading.Thread(target=sandbox.kill) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert not any(thread.is_alive() for thread in threads)
    sandbox.kill()
    assert_fully_removed(sandbox)
    assert sleepers(mark) == []
    for call in (lambda: sandbox.exec("true"), lambda: sandbox.start_bg("true"), lambda: sandbox.exists("/workdir")):
        with pytest.raises(SandboxClosed):
            call()


def test_a_command_running_during_kill_returns_a_killed_result(sandbox):
    mark = marker()
    results = []
    runner = threading.Thread(target=lambda: results.append(sandbox.exec(f"sleep {mark}", timeout=None)))
    runner.start()
    wait_for_sleepers(mark, 1)
    sandbox.kill()
    runner.join(timeout=10)
    assert results[0].exit_code in (128 + signal.SIGTERM, 128 + signal.SIGKILL)


def test_the_sandbox_outlives_the_thread_that_created_it(backend):
    made = []
    creator = threading.Thread(target=lambda: made.append(backend.create()))
    creator.start()
    creator.join()
    sb = made[0]
    try:
        jobs = []
        starter = threading.Thread(target=lambda: jobs.append(sb.start_bg("sleep 0.5; echo done")))
        starter.start()
        starter.join()
        time.sleep(0.2)  # a PR_SET_PDEATHSIG (the keeper's, a job's bwrap's) tied to a dead thread
        # would have fired by now
        assert sb.exec("echo alive").stdout == "alive\n"
        assert jobs[0].wait(timeout=10) == 0
    finally:
        sb.kill()


def test_the_lifetime_limit_kills_the_sandbox(backend):
    mark = marker()
    sb = backend.create(timeout_s=0.5)
    sb.start_bg(f"sleep {mark}")
    deadline = time.monotonic() + 10
    while sb.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    sb.kill()  # waits for the timer's kill to finish
    assert_fully_removed(sb)
    assert sleepers(mark) == []


def _run_owner(base_dir: Path, mark: str, ending: str) -> subprocess.CompletedProcess:
    """A separate interpreter that makes a sandbox with an escaping process tree, then ``ending``."""
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        from smoldata_tui.sandbox import LocalSandboxBackend
        sb = LocalSandboxBackend(base_dir={str(base_dir)!r}, kill_grace_s=0.2).create()
        sb.start_bg({ESCAPING_TREE.format(m=mark)!r})
        sb.exec("setsid sleep {mark} & echo")
        while sb.exec("ps -eo args").stdout.count("sleep {mark}") < 5:
            time.sleep(0.02)
        print(sb.sandbox_id, flush=True)
        {ending}
    """)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_interpreter_exit_kills_live_sandboxes(base_dir):
    mark = marker()
    done = _run_owner(base_dir, mark, "sys.exit(0)")
    assert done.returncode == 0, done.stderr
    assert sleepers(mark) == [] and processes_matching(mark) == []
    assert list(base_dir.iterdir()) == []


def test_a_killed_owner_takes_its_sandboxes_processes_with_it(base_dir):
    mark = marker()
    done = _run_owner(base_dir, mark, "os.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while processes_matching(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleepers(mark) == []
    # nor the host's bwraps that ran them: a job's would otherwise wait forever for its killed init
    assert processes_matching(mark) == []
    # Only the directory is left; remove_stale recognises its owner is gone.
    (left,) = base_dir.iterdir()
    assert json.loads((left / "sandbox.json").read_text())["sandbox_id"] == done.stdout.strip()
    assert LocalSandboxBackend(base_dir=base_dir).remove_stale() == [left.name]
    assert list(base_dir.iterdir()) == []


def test_remove_stale_keeps_sandboxes_whose_owner_runs(backend, sandbox):
    assert backend.remove_stale() == []
    assert sandbox.exec("true").exit_code == 0


def test_exec_runs_the_command_again_when_bwrap_could_not_join_the_sandbox(base_dir, tmp_path):  # noqa: F811
    # Under heavy load bwrap once failed to join the sandbox's PID namespace ("Can't send pid"),
    # before running the command. A bwrap that, when told to, fails that way once:
    real = shutil.which("bwrap")
    fail_next = tmp_path / "fail-next"
    flaky = tmp_path / "bwrap"
    flaky.write_text(
        "#!/bin/bash\n"
        f'if rm {fail_next} 2>/dev/null; then echo "bwrap: Can\'t send pid: Invalid argument" >&2; '
        'echo "bwrap: Unexpected short read from pid socket" >&2; exit 1; fi\n'
        f'exec {real} "$@"\n'
    )
    flaky.chmod(0o755)
    with LocalSandboxBackend(base_dir=base_dir, bwrap=str(flaky)).create() as sandbox:
        fail_next.touch()
        result = sandbox.exec("echo ran >> /tmp/ran; cat /tmp/ran")
        assert not fail_next.exists()  # the first join failed
        assert (result.exit_code, result.stdout) == (0, "ran\n")  # and the command ran once, after it
        # The same for a command started in the background.
        fail_next.touch()
        job = sandbox.start_bg("echo bg >> /tmp/ran")
        assert not fail_next.exists()
        assert job.wait(timeout=30) == 0
        assert sandbox.exec("cat /tmp/ran").stdout == "ran\nbg\n"


def test_a_setpriv_without_pdeathsig_is_left_out_and_commands_still_run(tmp_path, monkeypatch, backend):
    """A setpriv that refuses ``--pdeathsig`` (an older util-linux's): commands' bwraps then start without it."""
    from smoldata_tui.sandbox import bubblewrap

    old_setpriv = tmp_path / "bin" / "setpriv"
    old_setpriv.parent.mkdir()
    old_setpriv.write_text("#!/bin/sh\necho \"setpriv: unrecognized option '--pdeathsig'\" >&2\nexit 1\n")
    old_setpriv.chmod(0o755)
    monkeypatch.setenv("PATH", f"{old_setpriv.parent}:{os.environ['PATH']}")
    bubblewrap.monitor_prefix.cache_clear()
    try:
        assert bubblewrap.monitor_prefix() == ()
        sb = backend.create()
        try:
            assert sb.exec("echo ok").stdout == "ok\n"
            assert sb.start_bg("exit 5").wait(timeout=10) == 5
        finally:
            sb.kill()
    finally:
        bubblewrap.monitor_prefix.cache_clear()  # the next caller finds the machine's own setpriv
