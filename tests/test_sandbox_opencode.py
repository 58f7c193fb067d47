"""The real OpenCode 1.18.31 in a LocalSandbox, as an episode runs it: the install bound at
/root/.opencode/bin, the environment's agent command as a background job, a model on the host's
127.0.0.1 (the replay server), and the agent log followed by its new bytes only."""

from __future__ import annotations

import time

from smoldata_tui.sandbox import LocalSandboxBackend
from smoldata_tui.opencode import config as opencode_config
from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.replay.server import ReplayServer

from .opencode_fixture import FAKE_API_KEY, opencode_bin  # noqa: F401 - fixture
from .test_replay_opencode import INSTRUCTION, SALES, calls, recording
from .test_sandbox_support import base_dir  # noqa: F401 - fixture

HOME = "/root"


def test_opencode_runs_an_episode_in_the_sandbox(opencode_bin, base_dir):  # noqa: F811 - fixtures
    backend = LocalSandboxBackend(opencode_dir=opencode_bin.parent.parent, base_dir=base_dir, kill_grace_s=1)
    log = opencode_config.agent_log_path(HOME)
    with backend.create() as sb, ReplayServer(ReplayScript.from_trace(recording())) as server:
        config = opencode_config.build_opencode_json(server.base_url, FAKE_API_KEY, "replay/recorded-model")
        sb.write_text(opencode_config.config_path(HOME), opencode_config.opencode_json_text(config))
        sb.write_text(opencode_config.instruction_path(HOME), INSTRUCTION)
        sb.write_text("/workdir/input/sales.csv", SALES)
        sb.write_text(log, "")  # the tee target's folder, as opencode_env's install step makes it
        job = sb.start_bg(
            opencode_config.agent_command(HOME, opencode=f"{HOME}/.opencode/bin/opencode"),
            envs=opencode_config.agent_environment(HOME),
        )
        followed = b""
        deadline = time.monotonic() + 60
        while job.exit_code is None and time.monotonic() < deadline:
            followed += sb.read_bytes(log, offset=len(followed))
            time.sleep(0.1)
        assert job.wait(timeout=5) == 0, job.log_path.read_text()[-2000:]
        followed += sb.read_bytes(log, offset=len(followed))
        assert followed == sb.read_bytes(log)
        assert sorted(tool for _call, tool, _input in calls(followed)) == ["bash", "bash", "write"]
        assert sb.read_text("/workdir/answer.txt") == "West\n"
