"""What the environment's opencode_env writes and runs, rebuilt as pure functions.

The SmolDataEnvs environment configures OpenEnv's opencode_env with an OpenAI-compatible
endpoint, tools ``webfetch``, ``question`` and ``task`` disabled and
``{"permission": {"*": "allow"}}``. opencode_env then writes ``opencode.json`` and starts the
agent with one shell line. The built-in driver must reproduce both exactly, so that a local
episode is the episode training sees; the shapes below follow opencode_env's
``opencode_runtime.py`` (``build_opencode_json``, ``build_run_cmd``, ``build_env_vars`` and the
path helpers), home by home.

Secrets: ``build_opencode_json`` puts the API key into the config in plain text because
OpenCode reads it from there. That file belongs inside the sandbox (or a temporary HOME) and
nowhere else; anything we save or show gets :func:`smoldata_tui.masking.masked_config` instead. The key is deliberately
not passed as an environment variable (opencode_env sets ``OPENAI_API_KEY``): every bash
command the agent runs inherits the environment, so one ``env`` call would copy the key into
the trace.

No I/O here.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Iterable, Mapping
from typing import Any


__all__ = [
    "DISABLED_TOOLS",
    "ENVIRONMENT_SETUP_SHELL",
    "INSTALL_FOLDERS",
    "EXTRA_OPENCODE_JSON",
    "PROVIDER_NAME",
    "PROVIDER_PACKAGES",
    "agent_command",
    "agent_environment",
    "agent_log_path",
    "build_opencode_json",
    "config_path",
    "instruction_path",
    "opencode_json_text",
    "setup_shell",
    "workdir_path",
]

#: The environment's OpenCodeConfig.disabled_tools and extra_opencode_json.
DISABLED_TOOLS = ("webfetch", "question", "task")
EXTRA_OPENCODE_JSON: Mapping[str, Any] = {"permission": {"*": "allow"}}
#: opencode_env names its provider block "intercepted" whatever the endpoint, so the model
#: string stays the same with and without its logging proxy.
PROVIDER_NAME = "intercepted"
PROVIDER_PACKAGES = {
    "openai_compatible": "@ai-sdk/openai-compatible",
    "openai": "@ai-sdk/openai",
    "anthropic": "@ai-sdk/anthropic",
}
DEFAULT_REQUEST_TIMEOUT_MS = 600_000  # opencode_env's default


def build_opencode_json(
    base_url: str,
    api_key: str,
    model: str,
    *,
    provider: str = "openai_compatible",
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    disabled_tools: Iterable[str] = DISABLED_TOOLS,
    enabled_tools: Iterable[str] | None = None,
    extra: Mapping[str, Any] | None = EXTRA_OPENCODE_JSON,
    proxy_restores_model: bool = False,
) -> dict[str, Any]:
    """The ``opencode.json`` opencode_env writes for this endpoint, as a dict.

    ``model`` is the endpoint's model name, organisation prefix included (``Qwen/Qwen3.5-4B``).

    With ``proxy_restores_model`` (OpenCode talks to a proxy that sets every request's ``model``
    to the endpoint's name, as opencode_env's logging proxy does with ``--model-override`` and
    openenv's ``CaptureServer`` does with its ``model``) the document is opencode_env's exactly:
    the model id is what follows the first ``/`` (``intercepted/Qwen3.5-4B``). That id is more
    than what OpenCode sends: OpenCode writes it into the system prompt ("You are powered by the
    model named Qwen3.5-4B. The exact model ID is intercepted/Qwen3.5-4B"), so any other spelling
    changes the prompt the model sees in training.

    Without it (OpenCode talks to the endpoint itself) the model id is the name whole
    (``intercepted/Qwen/Qwen3.5-4B``, sent as ``Qwen/Qwen3.5-4B``), because an endpoint serving
    ``Qwen/Qwen3.5-4B`` answers 404 to ``Qwen3.5-4B``. That id, in this file and in the system
    prompt, is then the one difference from opencode_env's document.

    ``extra`` is deep-merged last, so it can override anything. With ``enabled_tools`` the tools
    map lists those as ``true`` and ignores ``disabled_tools`` (opencode_env's rule).
    """
    if provider not in PROVIDER_PACKAGES:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDER_PACKAGES)}")
    model_id = model.split("/", 1)[-1] if proxy_restores_model else model
    doc: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "model": f"{PROVIDER_NAME}/{model_id}",
        "provider": {
            PROVIDER_NAME: {
                "npm": PROVIDER_PACKAGES[provider],
                "name": "Intercepted",
                "options": {"baseURL": base_url, "apiKey": api_key, "timeout": request_timeout_ms},
                "models": {model_id: {"name": "Intercepted Model"}},
            }
        },
    }
    if enabled_tools is not None:
        tools = {tool: True for tool in enabled_tools}
    else:
        tools = {tool: False for tool in disabled_tools}
    if tools:
        doc["tools"] = tools
    _deep_merge(doc, copy.deepcopy(dict(extra or {})))
    return doc


def opencode_json_text(config: Mapping[str, Any]) -> str:
    """The file's text, formatted as opencode_env writes it (``json.dumps(indent=2)``)."""
    return json.dumps(config, indent=2)


# ---------------------------------------------------------------------------------- paths


#: What opencode_env's install command creates under the home (``mkdir -p``) before it fetches
#: OpenCode; skipped along with the install when OpenCode is already there.
INSTALL_FOLDERS = (".config/opencode", "logs/agent", "logs/verifier", "task", "workdir")
#: The environment's OpenCodeConfig.extra_setup_shell, run after opencode_env's install created
#: ``/root/workdir`` (with the rest of its folders): the agent's workdir becomes ``/workdir``.
ENVIRONMENT_SETUP_SHELL = "mkdir -p /workdir && rmdir /root/workdir && ln -s /workdir /root/workdir"


def setup_shell(home: str) -> str:
    """What opencode_env's install and the environment's setup leave behind, made idempotent for
    the built-in driver: opencode_env's folders, and ``<home>/workdir`` → ``/workdir`` (a local
    sandbox already has the link; an image usually has neither)."""
    folders = " ".join(shlex.quote(f"{home}/{name}") for name in INSTALL_FOLDERS if name != "workdir")
    workdir = shlex.quote(workdir_path(home))
    return (
        f"mkdir -p {folders} /workdir && "
        f"if [ ! -L {workdir} ]; then mkdir -p {workdir} && rmdir {workdir} && ln -s /workdir {workdir}; fi"
    )


def config_path(home: str) -> str:
    return f"{home}/.config/opencode/opencode.json"


def instruction_path(home: str) -> str:
    return f"{home}/task/instruction.md"


def agent_log_path(home: str) -> str:
    return f"{home}/logs/agent/opencode.jsonl"


def workdir_path(home: str) -> str:
    return f"{home}/workdir"


# ---------------------------------------------------------------------------------- running


def agent_environment(home: str, *, extra_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables to set for the agent, whose HOME is ``home``.

    opencode_env sets ``OPENCODE_CONFIG``; we add our own HOME and XDG folders (so a local run
    never reads or writes the user's real OpenCode state and sessions land in
    ``<home>/.local/share/opencode``) and switch off OpenCode's self-update. ``PATH`` is left to
    the caller. No credentials: see the module docstring.
    """
    env = dict(extra_env or {})
    env.update(
        HOME=home,
        XDG_CONFIG_HOME=f"{home}/.config",
        XDG_DATA_HOME=f"{home}/.local/share",
        XDG_CACHE_HOME=f"{home}/.cache",
        XDG_STATE_HOME=f"{home}/.local/state",
        OPENCODE_CONFIG=config_path(home),
        OPENCODE_DISABLE_AUTOUPDATE="1",
    )
    return env


def agent_command(home: str, *, opencode: str = "opencode", run_format: str = "json") -> str:
    """The shell line that starts the agent, as opencode_env builds it.

    With the default ``opencode`` the line is opencode_env's ``build_run_cmd`` preceded by
    ``set -o pipefail &&`` (so the agent's exit status is OpenCode's, not ``tee``'s; checked in
    tests/test_opencode_env_harness.py where opencode_env is importable); it finds the binary
    through ``$HOME/.opencode/bin`` on PATH. Any other value is the binary's path, quoted.
    The instruction is passed as one argument, which OpenCode 1.18.31 sends to the model
    wrapped in double quotes (the environment does the same). ``2>&1`` means OpenCode's stderr
    warnings land in the log as non-JSON lines, exactly as in the environment.
    """
    format_flag = "--format json" if run_format == "json" else ""
    if opencode == "opencode":
        prefix = 'set -o pipefail && export PATH="$HOME/.opencode/bin:$PATH" && '
        binary = "opencode"
    else:
        prefix = "set -o pipefail && "
        binary = shlex.quote(opencode)
    return (
        f"{prefix}cd {shlex.quote(workdir_path(home))} && "
        f'{binary} run {format_flag} "$(cat {shlex.quote(instruction_path(home))})" '
        f"2>&1 | tee {shlex.quote(agent_log_path(home))}"
    ).strip()


def _deep_merge(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = value
