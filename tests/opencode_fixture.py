"""The real OpenCode binary for tests, and a way to run one agent episode against a local model.

``opencode_bin`` installs the pinned version with :func:`ensure_opencode` into the normal user
cache (``$XDG_CACHE_HOME/smoldata-tui/opencode``), so CI installs it once and later runs reuse
it. It never skips: when npm works, failing to install is a test failure.

``run_agent`` runs the agent the way the environment does (``agent_command``: ``cd workdir &&
opencode run --format json "$(cat instruction)" 2>&1 | tee log``) in a temporary HOME and a PID
namespace of its own (:func:`in_own_pid_namespace`), with a hard wall-clock limit: a provider
stream without a finish reason makes OpenCode loop forever. On timeout the whole process group
gets TERM, then KILL (the first TERM can be swallowed).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from smoldata_tui.opencode import config as opencode_config
from smoldata_tui.opencode.install import ensure_opencode

FAKE_API_KEY = "sk-replay-test-3f9c1e7a5b"  # must show up in opencode.json and nowhere else
AGENT_TIMEOUT_S = 60.0


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    return ensure_opencode()


@dataclass
class AgentRun:
    returncode: int
    trace: bytes  # the agent log (<home>/logs/agent/opencode.jsonl)
    home: Path
    seconds: float

    @property
    def workdir(self) -> Path:
        return Path(opencode_config.workdir_path(str(self.home)))


def prepare_home(home: Path, instruction: str, files: dict[str, str] | None = None) -> Path:
    """The sandbox layout opencode_env creates, under ``home``; ``files`` go into the workdir."""
    for folder in ("workdir", "task", "logs/agent", ".config/opencode"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    Path(opencode_config.instruction_path(str(home))).write_text(instruction, encoding="utf-8")
    for name, content in (files or {}).items():
        path = home / "workdir" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return home


def run_agent(binary: Path, home: Path, base_url: str, *, timeout: float = AGENT_TIMEOUT_S) -> AgentRun:
    config = opencode_config.build_opencode_json(base_url, FAKE_API_KEY, "replay/recorded-model")
    Path(opencode_config.config_path(str(home))).write_text(opencode_config.opencode_json_text(config))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **opencode_config.agent_environment(str(home))}
    command = opencode_config.agent_command(str(home), opencode=str(binary))
    started = time.monotonic()
    proc = subprocess.Popen(
        in_own_pid_namespace(["bash", "-c", command]),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,  # tee writes the log file too
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        returncode = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        log = Path(opencode_config.agent_log_path(str(home)))
        tail = log.read_bytes()[-2000:] if log.exists() else b""
        pytest.fail(f"opencode did not finish within {timeout:.0f} s; log tail: {tail!r}")
    trace = Path(opencode_config.agent_log_path(str(home))).read_bytes()
    return AgentRun(returncode, trace, home, time.monotonic() - started)


def in_own_pid_namespace(argv: list[str]) -> list[str]:
    """``argv`` run in a PID namespace of its own, which dies with it, as an episode's sandbox is.
    OpenCode 1.18.31 signals a command's process group after it ended (``kill(-pgid, SIGTERM)``,
    seen with strace after a bash call exited 3): on the host, where pids wrap at 32,768 and the
    suite starts thousands of processes, that pgid can already be another test's sandbox."""
    return ["unshare", "--pid", "--fork", "--kill-child", "--", *argv]


def _stop_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
