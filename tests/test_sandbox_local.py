"""LocalSandbox with real bubblewrap: commands, files, the environment's layout, isolation."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from smoldata_tui.sandbox import (
    BgJob,
    FileTransfer,
    LocalSandboxBackend,
    PathOutsideSandbox,
    ReadOnlyPath,
    SandboxBackend,
    SandboxHandle,
)

from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures

SEED_EXTRA_SETUP_SHELL = "mkdir -p /workdir && rmdir /root/workdir && ln -s /workdir /root/workdir"


def test_exec_returns_stdout_stderr_and_exit_code(sandbox):
    result = sandbox.exec("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert sandbox.exec("true").exit_code == 0


def test_exec_runs_bash_as_root_in_home_by_default(sandbox):
    result = sandbox.exec('set -o pipefail; false | true; echo "rc=$? $(id -u) $PWD $HOME"')
    assert result.stdout == "rc=1 0 /root /root\n"


def test_exec_honours_cwd_and_envs_and_hides_the_host_environment(backend, monkeypatch):
    monkeypatch.setenv("HOST_SECRET", "must-not-leak")
    with backend.create(envs={"SANDBOX_WIDE": "a", "OVERRIDDEN": "sandbox"}) as sb:
        result = sb.exec(
            'echo "$PWD|$SANDBOX_WIDE|$OVERRIDDEN|$PER_COMMAND|${HOST_SECRET-unset}"',
            cwd="/workdir",
            envs={"OVERRIDDEN": "command", "PER_COMMAND": "x y"},
        )
    assert result.stdout == "/workdir|a|command|x y|unset\n"


def test_exec_with_a_missing_cwd_is_a_failed_command_not_an_exception(sandbox):
    result = sandbox.exec("pwd", cwd="/no/such/dir")
    assert result.exit_code != 0
    assert "/no/such/dir" in result.stderr


def test_exec_returns_when_the_command_ends_even_if_a_background_child_keeps_its_output(sandbox):
    started = time.monotonic()
    result = sandbox.exec("sleep 30 & echo started")
    assert time.monotonic() - started < 5
    assert (result.exit_code, result.stdout) == (0, "started\n")
    # What exec leaves running keeps running, as in a container: later commands see it.
    assert "sleep 30" in sandbox.exec("ps -eo args").stdout


def test_exec_keeps_large_output_whole(sandbox):
    result = sandbox.exec("head -c 3000000 /dev/zero | tr '\\0' x")
    assert result.exit_code == 0 and len(result.stdout) == 3_000_000


def test_commands_share_one_process_tree(sandbox):
    job = sandbox.start_bg("exec sleep 300")
    try:
        deadline = time.monotonic() + 5
        while "sleep 300" not in (listing := sandbox.exec("ps -eo args").stdout) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "sleep 300" in listing
    finally:
        job.kill()


def test_write_read_exists_round_trip_creates_parents(sandbox):
    assert not sandbox.exists("/root/task/deep/instruction.md")
    sandbox.write_text("/root/task/deep/instruction.md", "Find the answer — ünïcode\n")
    assert sandbox.exists("/root/task/deep/instruction.md")
    assert sandbox.exists("/root/task/deep")
    assert sandbox.read_text("/root/task/deep/instruction.md") == "Find the answer — ünïcode\n"
    assert sandbox.exec("cat /root/task/deep/instruction.md").stdout == "Find the answer — ünïcode\n"
    sandbox.exec("printf 'from inside' > /tmp/made-inside")
    assert sandbox.read_text("/tmp/made-inside") == "from inside"


def test_bytes_offset_limit_and_size_follow_a_growing_file(sandbox):
    assert sandbox.size("/root/logs/agent/opencode.jsonl") is None
    sandbox.exec("mkdir -p /root/logs/agent && printf 'line1\\n' > /root/logs/agent/opencode.jsonl")
    seen = sandbox.read_bytes("/root/logs/agent/opencode.jsonl")
    sandbox.exec("printf 'line2\\n' >> /root/logs/agent/opencode.jsonl")
    assert sandbox.size("/root/logs/agent/opencode.jsonl") == 12
    assert sandbox.read_bytes("/root/logs/agent/opencode.jsonl", offset=len(seen)) == b"line2\n"
    assert sandbox.read_bytes("/root/logs/agent/opencode.jsonl", offset=2, limit=3) == b"ne1"
    assert sandbox.read_bytes("/root/logs/agent/opencode.jsonl", offset=100) == b""
    sandbox.write_bytes("/workdir/blob", bytes(range(256)))
    assert sandbox.exec("od -An -tx1 -j255 /workdir/blob").stdout.split() == ["ff"]


def test_read_text_decodes_strictly(sandbox):
    sandbox.write_bytes("/workdir/bad", b"ok\xff\n")
    with pytest.raises(UnicodeDecodeError):
        sandbox.read_text("/workdir/bad")
    with pytest.raises(FileNotFoundError):
        sandbox.read_text("/workdir/missing")


def test_layout_matches_the_environments_daytona_sandbox(sandbox):
    result = sandbox.exec(
        "readlink /root/workdir; test -d /workdir && test -d /home/user/input && test -w /tmp && echo ok; hostname"
    )
    assert result.stdout.splitlines() == ["/workdir", "ok", sandbox.sandbox_id]
    # Through the link, from inside and from the host side alike.
    sandbox.exec("echo 42 > /root/workdir/answer.txt")
    assert sandbox.read_text("/workdir/answer.txt") == "42\n"
    sandbox.write_text("/root/workdir/from-host", "x")
    assert (sandbox.root / "workdir" / "from-host").read_text() == "x"


def test_the_environments_setup_shell_runs_verbatim_without_the_prepared_link(base_dir):
    unlinked = LocalSandboxBackend(base_dir=base_dir, link_workdir=False)
    with unlinked.create() as sb:
        assert sb.exec("test -d /root/workdir && ! test -L /root/workdir").exit_code == 0
        assert sb.exec(SEED_EXTRA_SETUP_SHELL).exit_code == 0
        assert sb.exec("readlink /root/workdir").stdout == "/workdir\n"


def test_host_files_outside_the_binds_are_not_visible(sandbox, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only")
    paths = [str(secret), str(Path(__file__).resolve()), "/etc/shadow", "/run", "/var/log"]
    listing = sandbox.exec("for p in " + " ".join(paths) + '; do test -e "$p/." -o -e "$p" && echo "$p"; done').stdout
    assert [line for line in listing.splitlines() if line != "/run"] == []
    assert sandbox.exec("ls -A /run").stdout == ""  # an empty directory of the sandbox's own
    # A symlink the agent makes to a host path resolves inside the sandbox on the host side too.
    sandbox.exec(f"ln -s {secret} /workdir/link")
    with pytest.raises(FileNotFoundError):
        sandbox.read_text("/workdir/link")
    sandbox.write_text("/workdir/link", "written through the link")
    assert secret.read_text() == "host only"
    assert sandbox.exec(f"cat {secret}").stdout == "written through the link"


def test_system_directories_are_read_only(sandbox):
    result = sandbox.exec("touch /usr/x; echo rc=$?; mount -o remount,rw /usr; echo rc=$?")
    assert "Read-only file system" in result.stderr
    assert "rc=0" not in result.stdout
    assert sandbox.exec("echo x >> /etc/passwd").exit_code != 0
    with pytest.raises(ReadOnlyPath):
        sandbox.write_text("/usr/smoldata-test", "x")
    with pytest.raises(ReadOnlyPath):
        sandbox.write_text("/etc/passwd", "x")
    assert not os.path.exists("/usr/smoldata-test")
    assert sandbox.read_text("/etc/os-release") == Path("/etc/os-release").read_text()


def test_sandboxed_processes_have_no_capabilities_and_no_terminal(sandbox):
    result = sandbox.exec("grep CapEff /proc/self/status; tty")
    assert "CapEff:\t0000000000000000" in result.stdout
    assert "not a tty" in result.stdout


def test_paths_that_escape_the_sandbox_are_refused(sandbox):
    for path in ("relative/path", "/../etc/passwd", "/workdir/../../etc/passwd"):
        with pytest.raises(PathOutsideSandbox):
            sandbox.read_text(path)
        with pytest.raises(PathOutsideSandbox):
            sandbox.write_text(path, "x")
    sandbox.exec("ln -s ../../../../.. /workdir/up")
    with pytest.raises(PathOutsideSandbox, match="climbs above"):
        sandbox.read_text("/workdir/up/etc/passwd")
    with pytest.raises(PathOutsideSandbox, match="only inside"):
        sandbox.read_text("/proc/self/status")


def test_a_fifo_planted_by_the_agent_does_not_hang_the_host(sandbox):
    sandbox.exec("mkfifo /workdir/fifo")
    with pytest.raises(OSError, match="not a regular file"):
        sandbox.read_bytes("/workdir/fifo")


def test_binds_and_opencode_dir_are_mounted_read_only(base_dir, tmp_path):
    opencode = tmp_path / "opencode-cache"
    (opencode / "bin").mkdir(parents=True)
    (opencode / "bin" / "opencode").write_text("#!/bin/sh\necho 1.18.31\n")
    (opencode / "bin" / "opencode").chmod(0o755)
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("a,b\n")
    with_binds = LocalSandboxBackend(opencode, binds=[(data, "/opt/smoldata-test/data")], base_dir=base_dir)
    with with_binds.create() as sb:
        assert sb.exec("/root/.opencode/bin/opencode --version").stdout == "1.18.31\n"
        assert sb.exec("cat /opt/smoldata-test/data/rows.csv").stdout == "a,b\n"
        assert sb.exec("touch /opt/smoldata-test/data/new").exit_code != 0
        assert sb.read_text("/opt/smoldata-test/data/rows.csv") == "a,b\n"
        # The host's /opt stays visible around the new mount point.
        host_opt = os.listdir("/opt") if os.path.isdir("/opt") else []
        assert sb.exec("ls -A /opt").stdout.split() == sorted([*host_opt, "smoldata-test"])
        with pytest.raises(ReadOnlyPath):
            sb.write_text("/root/.opencode/bin/opencode", "x")
    assert not (data / "new").exists()


def test_sandboxes_are_isolated_from_each_other(backend):
    with backend.create() as first, backend.create() as second:
        first.write_text("/workdir/answer.txt", "first")
        assert not second.exists("/workdir/answer.txt")
        job = first.start_bg("exec sleep 301")
        assert "sleep 301" not in second.exec("ps -eo args").stdout
        job.kill()


def test_it_satisfies_the_opencode_env_protocols(backend, sandbox):
    assert isinstance(backend, SandboxBackend)
    assert isinstance(sandbox, SandboxHandle)
    assert isinstance(sandbox, FileTransfer)
    job = sandbox.start_bg("true")
    assert isinstance(job, BgJob)
    assert job.wait(10) == 0
