"""LocalDirSandbox: a test stand-in for an opencode_env SandboxHandle, and its own tests.

The sandbox's file system is a folder on the host. Absolute sandbox paths (/home/…,
/workdir…, /tmp/…) are mapped into that folder in write_text/read_text/exists, and
rewritten in exec's command, cwd and env values; commands really run (bash), so the
staging code under test runs for real. It isolates nothing: the real sandboxes are in
smoldata_tui/sandbox/.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str


# A sandbox path starts a word: not "/usr/tmp", not "a/tmp".
_SANDBOX_PATH = re.compile(r"(?<![\w.~/-])/(?=(?:home|workdir|tmp)(?:/|\b))")


class LocalDirSandbox:
    sandbox_id = "local-test"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.commands: list[str] = []  # as the caller sent them, before mapping
        self.writes: list[str] = []

    def host_path(self, path: str) -> Path:
        if not path.startswith("/"):
            raise ValueError(f"sandbox paths are absolute: {path!r}")
        return self.root / path.lstrip("/")

    def _map(self, text: str) -> str:
        return _SANDBOX_PATH.sub(str(self.root) + "/", text)

    def exec(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None, timeout: float | None = 60):
        self.commands.append(cmd)
        env = {**os.environ, **{key: self._map(value) for key, value in (envs or {}).items()}}
        workdir = self._map(cwd) if cwd else str(self.root)
        try:
            done = subprocess.run(
                ["bash", "-c", self._map(cmd)], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return ExecResult(124, "", "timed out")
        return ExecResult(done.returncode, done.stdout, done.stderr)

    def write_text(self, path: str, content: str) -> None:
        self.writes.append(path)
        target = self.host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))  # bytes: no newline translation, like a real upload

    def read_text(self, path: str) -> str:
        return self.host_path(path).read_bytes().decode("utf-8")  # no newline translation

    def exists(self, path: str) -> bool:
        return self.host_path(path).exists()

    def start_bg(self, cmd: str, *, envs=None, cwd=None):
        raise NotImplementedError("not needed by the tasks layer")

    def kill(self) -> None:
        pass


@pytest.fixture
def sandbox(tmp_path: Path) -> LocalDirSandbox:
    root = tmp_path / "sandbox"
    root.mkdir()
    return LocalDirSandbox(root)


def test_files_live_under_the_root_at_their_sandbox_path(sandbox):
    sandbox.write_text("/home/user/input/a/b.csv", "x,y\r\n1,é\n")
    assert (sandbox.root / "home/user/input/a/b.csv").read_bytes() == "x,y\r\n1,é\n".encode()
    assert sandbox.exists("/home/user/input/a/b.csv") and not sandbox.exists("/workdir/answer.txt")
    assert sandbox.read_text("/home/user/input/a/b.csv") == "x,y\r\n1,é\n"
    with pytest.raises(ValueError):
        sandbox.write_text("relative.txt", "")


def test_exec_runs_for_real_with_paths_mapped_in_command_cwd_and_env(sandbox):
    sandbox.write_text("/tmp/stage/f.txt", "hello")
    result = sandbox.exec('cat f.txt; echo; echo "$DEST"; ls /usr/bin/env; exit 3', cwd="/tmp/stage", envs={"DEST": "/home/user/input"})
    assert result.exit_code == 3
    assert result.stdout.splitlines() == ["hello", f"{sandbox.root}/home/user/input", "/usr/bin/env"]
    assert sandbox.exec("sleep 5", timeout=0.2).exit_code == 124
