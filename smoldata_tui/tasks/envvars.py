"""``[environment.env]`` / ``[verifier.env]`` values and the host variables they reference.

A value may reference host variables as ``${NAME}`` or ``$NAME`` (``$$`` is a literal ``$``),
e.g. ``HF_TOKEN = "${HF_TOKEN}"``. They are resolved at the last moment, from the environ the
caller passes, and an unset (or empty) variable stops the step with its name. Values of host
variables are secrets: they go into the child's environment and nowhere else; :func:`redact`
takes them back out of any output we show.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from smoldata_tui.tasks.errors import TaskError, UnsetVariableError
from smoldata_tui.tasks.model import Task

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Every `$` starts one of these; a `$` that matches none of the three groups is an error.
_DOLLAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|(?P<escaped>\$))?")


def _split(value: str, *, path: Path, table: str, key: str) -> list[tuple[str, str]]:
    """``value`` as ``("text", literal)`` and ``("var", NAME)`` parts, or a TaskError."""
    parts: list[tuple[str, str]] = []
    position = 0
    for match in _DOLLAR.finditer(value):
        parts.append(("text", value[position : match.start()]))
        name = match.group("braced") or match.group("bare")
        if name:
            parts.append(("var", name))
        elif match.group("escaped"):
            parts.append(("text", "$"))
        else:
            # The position, not the text: the value could be a pasted secret.
            raise TaskError(
                path,
                f"[{table}] {key}: the '$' at character {match.start() + 1} is not ${{NAME}}, $NAME or $$ "
                "(defaults and other shell forms are not supported)",
            )
        position = match.end()
    parts.append(("text", value[position:]))
    return parts


def check_env_table(table: Mapping[str, str], *, path: Path, name: str) -> None:
    """Raise a TaskError for a malformed reference in any value (used when loading)."""
    for key, value in table.items():
        _split(value, path=path, table=name, key=key)


def host_variables(table: Mapping[str, str]) -> list[str]:
    """The host variables the values reference, sorted (the table is assumed well-formed)."""
    names = {
        text
        for key, value in table.items()
        for kind, text in _split(value, path=Path(), table="", key=key)
        if kind == "var"
    }
    return sorted(names)


def resolve_env(table: Mapping[str, str], environ: Mapping[str, str], *, path: Path, name: str) -> dict[str, str]:
    """The table with every reference replaced by the host value; UnsetVariableError names the missing."""
    missing = [var for var in host_variables(table) if not environ.get(var)]
    if missing:
        raise UnsetVariableError(path, name, missing)
    resolved = {}
    for key, value in table.items():
        parts = _split(value, path=path, table=name, key=key)
        resolved[key] = "".join(environ[text] if kind == "var" else text for kind, text in parts)
    return resolved


def resolve_environment_env(task: Task, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``[environment.env]`` for staging (pull_bucket.py's environment)."""
    return resolve_env(task.environment_env, environ, path=task.task_toml, name="environment.env")


def resolve_verifier_env(task: Task, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``[verifier.env]`` for the grader on the host."""
    return resolve_env(task.verifier_env, environ, path=task.task_toml, name="verifier.env")


def secrets_of(table: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Host variable name → value, for every referenced variable that is set: what to redact."""
    return {var: environ[var] for var in host_variables(table) if environ.get(var)}
