"""A command that joins a sandbox survives the late exit of bwrap's intermediate process.

To join the sandbox's PID namespace, bwrap forks the command from an intermediate process that
exits at once. Had the command ``--die-with-parent`` (PR_SET_PDEATHSIG, set during its setup), an
exit that comes after that setup, as on a loaded machine, would make the kernel SIGKILL it: exit 137,
at any point of its run. The suite at two workers per CPU lost such commands in 3 of 8 runs; the
kernel's trace (``signal:signal_generate``) named bwrap's exiting child as the sender.

Here strace delays every exit of the joining bwrap's processes by 300 ms, so the intermediate exits
after the command's setup every time (the command's own exit waits too, which is harmless). Real
bubblewrap, real strace (``.ci/run`` installs both).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from smoldata_tui.sandbox import LocalSandboxBackend

from .test_sandbox_support import GRACE_S

EXIT_DELAY_US = 300_000


def late_exiting_bwrap(folder: Path) -> Path:
    """A ``bwrap`` for :class:`LocalSandboxBackend`: the keeper runs as it is; a command that joins
    (its ``--args`` hold ``--pidns``) runs under strace, each of its processes' exits delayed."""
    bwrap, strace = shutil.which("bwrap"), shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed: `apt-get install strace` (.ci/run installs it)")
    script = folder / "bwrap"
    script.write_text(
        "#!/bin/bash\n"
        # The options are in a memfd: reading it through /proc opens it anew, so bwrap's offset stays at 0.
        'if [ "$1" = "--args" ] && tr "\\0" "\\n" < "/proc/self/fd/$2" | grep -qx -- --pidns; then\n'
        f"  exec {strace} -f -qq -o /dev/null -e trace=exit_group"
        f' -e inject=exit_group:delay_enter={EXIT_DELAY_US} {bwrap} "$@"\n'
        "fi\n"
        f'exec {bwrap} "$@"\n'
    )  # fmt: skip
    script.chmod(0o755)
    return script


@pytest.fixture
def late_sandbox(tmp_path):
    backend = LocalSandboxBackend(base_dir=tmp_path / "sandboxes", bwrap=str(late_exiting_bwrap(tmp_path)),
                                  kill_grace_s=GRACE_S)  # fmt: skip
    with backend.create() as sandbox:
        yield sandbox


def test_a_command_keeps_its_exit_code_and_output_when_bwraps_intermediate_exits_late(late_sandbox):
    for _ in range(3):
        result = late_sandbox.exec("echo out; echo err >&2; exit 3")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_a_background_job_keeps_its_exit_code_and_output_when_bwraps_intermediate_exits_late(late_sandbox):
    job = late_sandbox.start_bg("echo started; exit 4")
    assert job.wait(timeout=30) == 4
    assert Path(job.log_path).read_text() == "started\n"
