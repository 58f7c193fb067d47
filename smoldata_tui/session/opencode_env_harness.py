"""``--harness opencode-env``: the episode driven by opencode_env's own ``OpenCodeSessionFactory``,
configured exactly as the environment's ``TaskFactory`` configures it (transparent proxy mode,
the environment's OpenCodeConfig), on our sandbox backends. What the user watches is then what
training runs: opencode_env's install check, its opencode.json, its setup shell, its logging proxy
(whose per-turn trace is saved beside the episode) and its agent command.

Our backend is wrapped so that each sandbox arrives as the environment's image would: OpenCode
1.18.31 already in ``/root/.opencode/bin`` (so opencode_env skips its ``curl opencode.ai/install``,
which needs the internet) and the folders that install would have made. opencode_env is imported
only here, and only when this harness is chosen; it is optional (not on PyPI).
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from smoldata_tui.session.opencode_config import (
    DISABLED_TOOLS,
    ENVIRONMENT_SETUP_SHELL,
    EXTRA_OPENCODE_JSON,
    INSTALL_FOLDERS,
)
from smoldata_tui.session.placement import HOME

HARNESSES = ("builtin", "opencode-env")
INSTALL_HINT = (
    'pip install "openenv-opencode-env @ git+https://github.com/meta-pytorch/OpenEnv#subdirectory=envs/opencode_env"'
)
PROXY_TRACE_NAME = "run.proxy.jsonl"


class HarnessUnavailable(RuntimeError):
    pass


def opencode_env_available() -> bool:
    try:
        return importlib.util.find_spec("opencode_env") is not None
    except (ImportError, ValueError):
        return False


def require_opencode_env() -> None:
    if not opencode_env_available():
        raise HarnessUnavailable(f"--harness opencode-env needs opencode_env, which is not installed: {INSTALL_HINT}")


def environment_config(*, base_url: str, api_key: str, model: str, opencode_version: str, agent_timeout_s: float):
    """The environment's OpenCodeConfig (seed ``TaskFactory``), with the endpoint the user chose."""
    from opencode_env.config import OpenCodeConfig

    return OpenCodeConfig(
        base_url=base_url,
        api_key=api_key,
        model=model,
        opencode_version=opencode_version,
        sandbox_home=HOME,
        proxy_disable_thinking=True,
        proxy_max_tokens_cap=4096,
        agent_timeout_s=agent_timeout_s,
        run_format="json",
        extra_setup_shell=ENVIRONMENT_SETUP_SHELL,
        disabled_tools=list(DISABLED_TOOLS),
        extra_opencode_json=dict(EXTRA_OPENCODE_JSON),
    )


class ImageLikeBackend:
    """opencode_env's ``SandboxBackend`` over one of ours. ``create_sandbox(timeout_s, envs,
    metadata)`` makes a sandbox that looks like the environment's image (OpenCode in place, the
    install's folders made) and tells the episode about it: opencode_env retries a failed setup on
    a new sandbox, and the episode must release whichever is current on every path."""

    def __init__(self, create_sandbox: Callable[..., Any]) -> None:
        self._create = create_sandbox

    def create(self, *, timeout_s: int = 900, envs: dict[str, str] | None = None,
               metadata: dict[str, str] | None = None):  # fmt: skip
        return self._create(timeout_s, envs, metadata)


def install_folders_command() -> str:
    return "mkdir -p " + " ".join(f"{HOME}/{name}" for name in INSTALL_FOLDERS)


def open_session(config, backend: ImageLikeBackend, verifier: Callable[[Any, Any], Any], *, instruction: str,
                 folder: str):  # fmt: skip
    """opencode_env's factory in the environment's mode; the session is set up, the agent not started."""
    from opencode_env.harness import OpenCodeSessionFactory
    from opencode_env.task import OpenCodeTask

    options: dict[str, Any] = {}
    sampling = inspect.signature(OpenCodeSessionFactory).parameters.get("sampling")
    if sampling is not None and sampling.default is inspect.Parameter.empty:
        options["sampling"] = None  # newer opencode_env: a training policy; a watched run has none
    factory = OpenCodeSessionFactory(config=config, sandbox_backend=backend, mode="transparent_proxy",
                                     verifier=verifier, **options)  # fmt: skip
    task = OpenCodeTask(instruction=instruction, metadata={"folder": folder})
    return factory.create(task, start_agent=False)


def agent_job(session) -> Any:
    """The agent's BgJob, once ``start_agent`` ran (opencode_env keeps it private)."""
    job = getattr(session, "_bg_job", None)
    if job is None:
        raise HarnessUnavailable("this opencode_env keeps no handle on the agent job (OpenCodeSession._bg_job)")
    return job
