"""``--harness opencode-env``: opencode_env's own OpenCodeSessionFactory, in the environment's
configuration (transparent proxy mode), on our local and Daytona backends, with the real OpenCode
and the replay model. opencode_env is not on PyPI: these tests run where it is installed and are
skipped elsewhere (the issue asks exactly that). The proxy-trace reader is tested everywhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smoldata_tui.session.episode import OPENCODE_ENV_STAGES, Episode, EpisodeSpec
from smoldata_tui.sandbox.host_python import python_shim_dir
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.session.opencode_env_harness import opencode_env_available
from smoldata_tui.session.proxy_trace import load_proxy_trace, summary_line
from smoldata_tui.sandbox.daytona import DaytonaSettings
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes, analyze_path

from .conftest import SAMPLES
from .daytona_local.fixtures import real_opencode_daytona  # noqa: F401 - a fixture
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import Recorder, processes_matching, sandbox_dirs, sandboxes  # noqa: F401 - a fixture

needs_opencode_env = pytest.mark.skipif(not opencode_env_available(), reason="opencode_env is not installed")
PASSING = SAMPLES / "clean_pass.jsonl"
SECRET = "sk-proxy-test-5e1d9c7b3a"


def run_harness(tmp_path: Path, backend: str) -> tuple:
    endpoint = open_endpoint(model=f"replay:{PASSING}")
    endpoint.api_key = SECRET  # opencode_env hands the key to its proxy and the agent's environment
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint, backend=backend,
                       timeout_s=120, save_dir=tmp_path / "runs", harness="opencode-env",
                       daytona=DaytonaSettings(keepalive_s=0.5, retry_budget_s=30))  # fmt: skip
    recorder = Recorder()
    return Episode(spec, recorder).run(), recorder


def check_episode(result, recorder) -> None:
    assert result.error is None, result.error
    assert result.status == "finished" and result.grade.env_reward == 1.0
    live = analyze_bytes(result.trace_path.read_bytes())[0]
    assert live.verdict.native_tool_calls == analyze_path(PASSING)[0].verdict.native_tool_calls == 3
    done = [name for name, state, _ in recorder.stages if state == "done"]
    # The sandbox is made (and done) inside opencode_env's setup, which the stage table lists first.
    assert done == ["create sandbox", "opencode_env setup", *OPENCODE_ENV_STAGES[2:]]
    metadata = json.loads(result.metadata_path.read_text())
    assert metadata["harness"] == "opencode-env" and metadata["proxy_trace"] == "run.proxy.jsonl"
    assert "api_key" not in metadata["config"] and metadata["config"]["proxy_max_tokens_cap"] == 4096
    assert metadata["config"]["extra_setup_shell"].startswith("mkdir -p /workdir && rmdir /root/workdir")
    # The proxy saw every model call: the agent's turns carry tools, and the tokens are counted.
    turns, problems = load_proxy_trace(result.trace_path.with_name("run.proxy.jsonl"))
    assert problems == [] and sum(turn.with_tools for turn in turns) == 4
    assert sum(turn.completion_tokens or 0 for turn in turns) > 0
    assert any(message.startswith("proxy trace: ") for _, _, message in recorder.stages)
    for path in result.trace_path.parent.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path
    assert processes_matching("interception.py") == []  # the proxy ended with the sandbox


@needs_opencode_env
def test_opencode_env_drives_a_local_episode_with_its_proxy(tmp_path, sandboxes, opencode_bin):
    result, recorder = run_harness(tmp_path, "local")
    check_episode(result, recorder)
    assert sandbox_dirs(sandboxes) == []


@needs_opencode_env
def test_opencode_env_drives_a_daytona_episode_with_its_proxy(tmp_path, real_opencode_daytona):
    result, recorder = run_harness(tmp_path, "daytona")
    check_episode(result, recorder)
    assert real_opencode_daytona.sandbox_ids() == []


@needs_opencode_env
def test_the_builtin_driver_writes_what_published_opencode_env_writes_but_for_the_documented_differences():
    """What docs/run.md claims about opencode_env, checked against the installed opencode_env."""
    import inspect

    from opencode_env.config import OpenCodeConfig
    from opencode_env.harness import OpenCodeSessionFactory
    from opencode_env.opencode_runtime import build_install_cmd, build_opencode_json, build_run_cmd

    from smoldata_tui.opencode.config import agent_command, build_opencode_json as ours, opencode_json_text
    from smoldata_tui.session.opencode_env_harness import environment_config
    from smoldata_tui.session.placement import HOME

    url, model = "http://127.0.0.1:9/v1", "Qwen/Qwen3.5-4B"
    config = environment_config(base_url=url, api_key=SECRET, model=model, opencode_version="1.18.31",
                                agent_timeout_s=60)  # fmt: skip
    assert isinstance(config, OpenCodeConfig)
    theirs = build_opencode_json(config)
    # opencode_env's model id is the name after its first "/" (OpenCode sends that, and puts it in the
    # system prompt); its proxy puts the whole name back on every request, as openenv's CaptureServer
    # does. Behind such a proxy, our opencode.json is opencode_env's text exactly.
    assert '["--model-override", self._config.model]' in inspect.getsource(OpenCodeSessionFactory._start_proxy)
    assert opencode_json_text(ours(url, SECRET, model, proxy_restores_model=True)) == theirs
    # Talking to the endpoint itself (no proxy), the model id keeps its prefix, and nothing else differs.
    whole = json.loads(theirs)
    assert whole["model"] == "intercepted/Qwen3.5-4B"
    assert whole["provider"]["intercepted"]["models"] == {"Qwen3.5-4B": {"name": "Intercepted Model"}}
    whole["model"] = "intercepted/Qwen/Qwen3.5-4B"
    whole["provider"]["intercepted"]["models"] = {"Qwen/Qwen3.5-4B": {"name": "Intercepted Model"}}
    assert opencode_json_text(ours(url, SECRET, model)) == json.dumps(whole, indent=2)
    # The agent command: opencode_env's, after "set -o pipefail && " (so the agent's exit status is
    # OpenCode's, not tee's).
    assert agent_command(HOME) == "set -o pipefail && " + build_run_cmd(config)
    # Its install probe looks in /home/user whatever sandbox_home is, and the version pin is an
    # environment variable of curl, not of the installer that bash runs.
    assert "/home/user/.opencode/bin/opencode --version" in inspect.getsource(OpenCodeSessionFactory._opencode_already_installed)
    assert "OPENCODE_VERSION=1.18.31 curl -fsSL https://opencode.ai/install | bash" in build_install_cmd(config)


@pytest.mark.skipif(opencode_env_available(), reason="opencode_env is installed here")
def test_without_opencode_env_the_harness_is_a_clear_usage_error(cli):
    done = cli("run", "--task", "sales-top-region", "--harness", "opencode-env", "--model", f"replay:{PASSING}", "--headless")
    assert done.returncode == 2 and "opencode_env" in done.stderr and "pip install" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_python_shim_keeps_the_virtual_environment_it_runs_in(tmp_path, monkeypatch):
    """opencode_env's proxy runs ``python``: from a venv, that must still be the venv (its httpx)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    shim = python_shim_dir(str(venv / "bin" / "python"))
    for name in ("python", "python3"):
        done = subprocess.run([str(shim / name), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0 and done.stdout.strip() == str(venv), (done.stdout, done.stderr)
    assert python_shim_dir(str(venv / "bin" / "python")) == shim  # reused, not rewritten


def test_the_proxy_trace_reader_summarises_turns_and_survives_bad_lines(tmp_path):
    records = [
        {"turn": 1, "request": {"messages": []}, "response": {"usage": {"completion_tokens": 7}}, "finish_reason": "stop",
         "completion_tokens": 0, "per_token_logps": [], "latency_s": 0.2},
        {"turn": 2, "request": {"tools": [{"type": "function"}]}, "response": {"usage": {"prompt_tokens": 900}},
         "finish_reason": "tool_calls", "completion_tokens": 3, "per_token_logps": [-0.5, -1.5, -0.1], "latency_s": 1.25},
        {"turn": 3, "request": {"tools": [{}]}, "response": {"choices": [], "upstream_status": 502,
         "upstream_error": "bad gateway"}, "logprobs": [{"logprob": -2.0}], "latency_s": "slow"},
    ]  # fmt: skip
    path = tmp_path / "run.proxy.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n{not json\n[1]\n", encoding="utf-8")
    turns, problems = load_proxy_trace(path)
    assert [t.turn for t in turns] == [1, 2, 3] and [t.with_tools for t in turns] == [False, True, True]
    assert [t.completion_tokens for t in turns] == [7, 3, None]  # the proxy's count, else the usage
    assert turns[1].mean_logprob == pytest.approx(-0.7) and turns[1].min_logprob == -1.5
    assert turns[2].mean_logprob == -2.0 and turns[2].latency_s is None and "bad gateway" in turns[2].upstream_error
    assert len(problems) == 2 and "line 4" in problems[0] and "line 5" in problems[1]
    assert summary_line(turns) == ("proxy trace: 3 turn(s), 2 with tools, 10 completion tokens, "
                                   "mean logprob -1.350, 1 upstream error(s)")  # fmt: skip
    assert load_proxy_trace(tmp_path / "missing.jsonl")[1]


async def test_the_viewer_shows_the_proxy_trace_beside_the_timeline(tmp_path):
    from .test_ui_helpers import loaded, replay_app, screen_lines

    shutil.copy(PASSING, tmp_path / "run.jsonl")
    meta = {"format": "smoldata-episode", "schema_version": 1, "trace": "run.jsonl", "task": "sales-top-region",
            "harness": "opencode-env", "status": "finished", "proxy_trace": "run.proxy.jsonl"}  # fmt: skip
    (tmp_path / "run.meta.json").write_text(json.dumps(meta))
    records = [{"turn": n, "request": {"tools": [{}]} if n > 1 else {}, "response": {"usage": {"completion_tokens": 10 * n}},
                "finish_reason": "tool_calls" if n < 4 else "stop", "per_token_logps": [-0.25, -0.75],
                "latency_s": 0.5} for n in range(1, 5)]  # fmt: skip
    records[2]["response"]["upstream_error"] = "upstream \x1b[31mtimeout"
    (tmp_path / "run.proxy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    app = replay_app(tmp_path / "run.jsonl")
    async with app.run_test(size=(160, 50)) as pilot:
        await loaded(pilot)
        await pilot.press("4")  # the episode tab
        await pilot.pause(0.5)
        shown = "\n".join(screen_lines(app))
    assert "Model calls (opencode_env proxy trace)" in shown
    assert "4 turn(s), 3 with tools, 100 completion tokens," in shown and "mean logprob -0.500, 1 upstream error(s)" in shown
    assert "3 agent tool_calls       30   -0.500   -0.750   0.50 s" in shown
    assert "upstream error: upstream ␛[31mtimeout" in shown  # agent-side text is inert
