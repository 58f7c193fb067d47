"""``--harness opencode-env``: the episode driven by opencode_env's own ``OpenCodeSessionFactory``,
configured exactly as the environment's ``TaskFactory`` configures it (transparent proxy mode,
the environment's OpenCodeConfig), on our sandbox backends: opencode_env's install check, its
opencode.json, its setup shell, its logging proxy (whose per-turn trace is saved beside the
episode) and its agent command.

Published opencode_env (huggingface/OpenEnv ``envs/opencode_env``) differs from the environment's
in ways this module copes with:

- ``OpenCodeSessionFactory.create(task, seed, episode_id)`` starts the agent before it returns
  (the environment's copy takes ``start_agent=False`` and stages the task in between). Where
  ``create`` has no ``start_agent`` parameter, the task is staged into each sandbox as it is made,
  before opencode_env bootstraps it (:func:`create_starts_agent`).
- Its install probe runs ``/home/user/.opencode/bin/opencode --version`` whatever ``sandbox_home``
  is, and its logging proxy lives in ``/home/user/proxy`` and writes ``/home/user/logs/agent``.
  Each sandbox therefore also gets ``/home/user/logs/agent`` and a link
  ``/home/user/.opencode/bin/opencode`` → ``/root/.opencode/bin/opencode`` (:func:`image_like_command`),
  so the install (``curl opencode.ai/install``, which needs the internet) is skipped.

opencode_env is imported only here, and only when this harness is chosen; it is optional (not on
PyPI).
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from smoldata_tui.opencode.config import (
    DISABLED_TOOLS,
    ENVIRONMENT_SETUP_SHELL,
    EXTRA_OPENCODE_JSON,
    INSTALL_FOLDERS,
)
from smoldata_tui.store.metadata import PROXY_TRACE_NAME
from smoldata_tui.session.placement import HOME, OPENCODE_IN_HOME

HARNESSES = ("builtin", "opencode-env")
INSTALL_HINT = (
    'pip install "openenv-opencode-env @ git+https://github.com/huggingface/OpenEnv#subdirectory=envs/opencode_env"'
)
#: The home opencode_env hard-codes for its install probe and its logging proxy.
UPSTREAM_HOME = "/home/user"


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


def image_like_command() -> str:
    """What the environment's image has before opencode_env starts: the folders its install would
    make under our home, and what opencode_env looks for under ``/home/user`` whatever
    ``sandbox_home`` says (OpenCode for its install probe, a folder for its proxy's log)."""
    folders = [f"{HOME}/{name}" for name in INSTALL_FOLDERS] + [f"{UPSTREAM_HOME}/logs/agent", f"{UPSTREAM_HOME}/.opencode/bin"]
    return f"mkdir -p {' '.join(folders)} && ln -sfn {OPENCODE_IN_HOME} {UPSTREAM_HOME}/.opencode/bin/opencode"


def create_starts_agent() -> bool:
    """True for published opencode_env, whose ``create`` starts the agent (no ``start_agent``)."""
    from opencode_env.harness import OpenCodeSessionFactory

    return "start_agent" not in inspect.signature(OpenCodeSessionFactory.create).parameters


def open_session(config, backend: ImageLikeBackend, verifier: Callable[[Any, Any], Any], *, instruction: str,
                 folder: str):  # fmt: skip
    """opencode_env's factory in the environment's mode. The agent is not started where ``create``
    takes ``start_agent``; elsewhere it is running (the backend staged the task beforehand)."""
    from opencode_env.harness import OpenCodeSessionFactory
    from opencode_env.task import OpenCodeTask

    options: dict[str, Any] = {}
    sampling = inspect.signature(OpenCodeSessionFactory).parameters.get("sampling")
    if sampling is not None and sampling.default is inspect.Parameter.empty:
        options["sampling"] = None  # newer opencode_env: a training policy; a watched run has none
    factory = OpenCodeSessionFactory(config=config, sandbox_backend=backend, mode="transparent_proxy",
                                     verifier=verifier, **options)  # fmt: skip
    task = OpenCodeTask(instruction=instruction, metadata={"folder": folder})
    if create_starts_agent():
        return factory.create(task)
    return factory.create(task, start_agent=False)


def agent_job(session) -> Any:
    """The agent's BgJob, once ``start_agent`` ran (opencode_env keeps it private)."""
    job = getattr(session, "_bg_job", None)
    if job is None:
        raise HarnessUnavailable("this opencode_env keeps no handle on the agent job (OpenCodeSession._bg_job)")
    return job
