"""The opencode.json, environment and command line are what opencode_env produces for the
environment's configuration; saved copies hold no key."""

from __future__ import annotations

import json
import subprocess

from smoldata_tui.opencode.config import (
    agent_command,
    agent_environment,
    build_opencode_json,
    opencode_json_text,
)
from smoldata_tui.masking import masked_config

BASE_URL = "https://vllm.example/v1"
KEY = "sk-live-0123456789abcdef"


def test_environment_configuration_gives_opencode_envs_document_with_the_full_model_name():
    # The document opencode_env writes for the seed's OpenCodeConfig (model "Qwen/Qwen3.5-4B"),
    # except that the model keeps its organisation prefix (opencode_env cuts it to "Qwen3.5-4B"):
    # without a proxy to put it back, OpenCode sends the name to the endpoint as written here.
    assert build_opencode_json(BASE_URL, KEY, "Qwen/Qwen3.5-4B") == {
        "$schema": "https://opencode.ai/config.json",
        "model": "intercepted/Qwen/Qwen3.5-4B",
        "provider": {
            "intercepted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Intercepted",
                "options": {"baseURL": BASE_URL, "apiKey": KEY, "timeout": 600000},
                "models": {"Qwen/Qwen3.5-4B": {"name": "Intercepted Model"}},
            }
        },
        "tools": {"webfetch": False, "question": False, "task": False},
        "permission": {"*": "allow"},
    }


def test_behind_a_proxy_that_restores_the_name_the_model_id_is_opencode_envs():
    # opencode_env keeps what follows the first "/"; its proxy (and openenv's CaptureServer) sends
    # the whole name upstream. Nothing else changes.
    proxied = build_opencode_json(BASE_URL, KEY, "Qwen/Qwen3.5-4B", proxy_restores_model=True)
    assert proxied["model"] == "intercepted/Qwen3.5-4B"
    assert proxied["provider"]["intercepted"].pop("models") == {"Qwen3.5-4B": {"name": "Intercepted Model"}}
    whole = build_opencode_json(BASE_URL, KEY, "Qwen/Qwen3.5-4B")
    del whole["model"], whole["provider"]["intercepted"]["models"], proxied["model"]
    assert proxied == whole
    assert build_opencode_json(BASE_URL, KEY, "org/team/m", proxy_restores_model=True)["model"] == "intercepted/team/m"
    assert build_opencode_json(BASE_URL, KEY, "replay", proxy_restores_model=True)["model"] == "intercepted/replay"


def test_options_follow_opencode_envs_rules():
    config = build_opencode_json(
        BASE_URL,
        KEY,
        "gpt-4.1-mini",
        provider="openai",
        request_timeout_ms=60_000,
        enabled_tools=["bash", "read"],
        extra={"permission": {"bash": "ask"}, "provider": {"intercepted": {"options": {"timeout": 1}}}},
    )
    assert config["provider"]["intercepted"]["npm"] == "@ai-sdk/openai"
    assert config["tools"] == {"bash": True, "read": True}  # enabled_tools wins over disabled_tools
    assert config["permission"] == {"bash": "ask"}
    assert config["provider"]["intercepted"]["options"] == {"baseURL": BASE_URL, "apiKey": KEY, "timeout": 1}
    assert "tools" not in build_opencode_json(BASE_URL, KEY, "m", disabled_tools=())
    # the default extra is not shared state: merging into one config leaves the next intact
    config = build_opencode_json(BASE_URL, KEY, "m")
    config["permission"]["*"] = "deny"
    assert build_opencode_json(BASE_URL, KEY, "m")["permission"] == {"*": "allow"}


def test_file_text_is_indented_json():
    config = build_opencode_json(BASE_URL, KEY, "m")
    assert json.loads(opencode_json_text(config)) == config
    assert opencode_json_text(config).startswith('{\n  "$schema"')


def test_redacted_copy_hides_credentials_and_keeps_the_rest():
    config = build_opencode_json(BASE_URL, KEY, "m", extra={"provider": {"intercepted": {"options": {
        "headers": {"Authorization": "Bearer abc", "X-Trace": "on"}, "maxTokens": 4096}}}})
    safe = masked_config(config)
    text = json.dumps(safe)
    assert KEY not in text and "Bearer abc" not in text
    options = safe["provider"]["intercepted"]["options"]
    assert options["apiKey"] == "***" and options["headers"] == {"Authorization": "***", "X-Trace": "on"}
    assert options["maxTokens"] == 4096 and options["baseURL"] == BASE_URL
    assert config["provider"]["intercepted"]["options"]["apiKey"] == KEY  # the original is untouched


def test_agent_environment_isolates_home_and_carries_no_key():
    env = agent_environment("/root", extra_env={"TZ": "UTC"})
    assert env == {
        "TZ": "UTC",
        "HOME": "/root",
        "XDG_CONFIG_HOME": "/root/.config",
        "XDG_DATA_HOME": "/root/.local/share",
        "XDG_CACHE_HOME": "/root/.cache",
        "XDG_STATE_HOME": "/root/.local/state",
        "OPENCODE_CONFIG": "/root/.config/opencode/opencode.json",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }


def test_agent_command_is_opencode_envs_line():
    assert agent_command("/root") == (
        'set -o pipefail && export PATH="$HOME/.opencode/bin:$PATH" && cd /root/workdir && '
        'opencode run --format json "$(cat /root/task/instruction.md)" 2>&1 | tee /root/logs/agent/opencode.jsonl'
    )


def test_agent_command_with_a_binary_path_runs_in_bash(tmp_path):
    home = tmp_path / "a home with spaces"
    for folder in ("workdir", "task", "logs/agent"):
        (home / folder).mkdir(parents=True)
    (home / "task/instruction.md").write_text("say 'hi' \"there\"")
    fake = tmp_path / "bin dir" / "opencode"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s|" "$PWD" "$@"\necho oops >&2\nexit 3\n')
    fake.chmod(0o755)
    done = subprocess.run(["bash", "-c", agent_command(str(home), opencode=str(fake))], capture_output=True, text=True)
    assert done.returncode == 3  # pipefail: the agent's exit code, not tee's
    log = (home / "logs/agent/opencode.jsonl").read_text()
    assert log == f"{home}/workdir|run|--format|json|say 'hi' \"there\"|oops\n"  # stderr lands in the log
