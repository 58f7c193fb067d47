"""Read Harbor task folders (task.toml, instruction.md, environment/, tests/grader.py).

Everything is checked here, once, so staging and grading can trust a :class:`Task`: a
malformed folder raises a TaskError naming the file and the problem.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from smoldata_tui.tasks.envvars import ENV_NAME, check_env_table
from smoldata_tui.tasks.errors import TaskError, TaskSetError
from smoldata_tui.tasks.model import DEFAULT_GRADER_TIMEOUT_S, PULL_BUCKET, Task

TASK_LAYOUT = "task.toml, instruction.md, environment/ and tests/grader.py"


def default_task_root() -> Path:
    """The sample task set shipped inside the package (``smoldata_tui/sample_tasks``)."""
    root = resources.files("smoldata_tui").joinpath("sample_tasks")
    if not isinstance(root, Path):  # e.g. a zipped install: graders must run from real files
        raise TaskError(str(root), "the shipped sample tasks are not on the file system; pass --tasks DIR")
    return root


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise TaskError(path, f"missing: every task folder needs {what}")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(path, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise TaskError(path, f"cannot read: {exc.strerror or exc}") from None


def _table(document: dict[str, Any], dotted: str, path: Path) -> dict[str, Any]:
    """The TOML table at ``dotted`` (``{}`` when absent); anything else there is an error."""
    value: Any = document
    for part in dotted.split("."):
        value = value.get(part, {})
        if not isinstance(value, dict):
            raise TaskError(path, f"[{dotted}] must be a table, not {type(value).__name__}")
    return value


def _env_table(document: dict[str, Any], dotted: str, path: Path) -> dict[str, str]:
    table = _table(document, dotted, path)
    for key, value in table.items():
        if not ENV_NAME.match(key):
            raise TaskError(path, f"[{dotted}] {key!r} is not a valid environment variable name")
        if not isinstance(value, str):
            raise TaskError(path, f"[{dotted}] {key} must be a string (quote it), not {type(value).__name__}")
    check_env_table(table, path=path, name=dotted)
    return dict(table)


def _difficulty_tier(metadata: dict[str, Any], path: Path) -> str | None:
    # SmolDataEnvs writes difficulty_tier; plain Harbor tasks write difficulty.
    for key in ("difficulty_tier", "difficulty"):
        if key in metadata:
            value = metadata[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise TaskError(path, f"[metadata] {key} must be a string or an integer")
            return str(value)
    return None


def _grader_timeout(document: dict[str, Any], path: Path) -> float:
    value = _table(document, "verifier", path).get("timeout_sec", DEFAULT_GRADER_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise TaskError(path, "[verifier] timeout_sec must be a positive number of seconds")
    return float(value)


def _environment_files(environment: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files under input/ relative to it, other files relative to environment/), sorted."""
    if environment.is_symlink():
        raise TaskError(environment, "is a symbolic link; files staged into the sandbox must be regular files")
    if not environment.is_dir():
        raise TaskError(environment, "missing: every task folder needs environment/ (what is staged into the sandbox)")
    bundled: list[str] = []
    support: list[str] = []
    for directory, subdirectories, files in os.walk(environment):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        here = Path(directory)
        for name in subdirectories + files:
            # A link could point anywhere on the host (the grader, a key file): only real files are staged.
            if (here / name).is_symlink():
                raise TaskError(here / name, "is a symbolic link; files staged into the sandbox must be regular files")
        for name in sorted(files):
            relative = (here / name).relative_to(environment)
            if relative.parts[0] == "input" and len(relative.parts) > 1:
                bundled.append(Path(*relative.parts[1:]).as_posix())
            else:
                support.append(relative.as_posix())
    return tuple(sorted(bundled)), tuple(sorted(support))


def load_task(folder: str | os.PathLike[str]) -> Task:
    """Read and check one task folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise TaskError(folder, "no such task folder" if not folder.exists() else "not a directory")
    toml_path = folder / "task.toml"
    try:
        document = tomllib.loads(_read_text(toml_path, "task.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(toml_path, f"not valid TOML: {exc}") from None
    metadata = _table(document, "metadata", toml_path)
    environment_env = _env_table(document, "environment.env", toml_path)
    verifier_env = _env_table(document, "verifier.env", toml_path)

    instruction_path = folder / "instruction.md"
    instruction = _read_text(instruction_path, "instruction.md (the prompt)")
    if not instruction.strip():
        raise TaskError(instruction_path, "is empty: it is the prompt the agent gets")

    bundled, support = _environment_files(folder / "environment")
    has_pull_bucket = PULL_BUCKET in support
    if not has_pull_bucket and not bundled:
        raise TaskError(
            folder / "environment",
            f"nothing to stage: it needs {PULL_BUCKET} (downloads the data) or files under input/",
        )
    grader = folder / "tests" / "grader.py"
    if not grader.is_file():
        raise TaskError(grader, "missing: every task folder needs tests/grader.py (run on the host to grade)")

    return Task(
        name=folder.name,
        folder=folder,
        instruction=instruction,
        difficulty_tier=_difficulty_tier(metadata, toml_path),
        environment_env=environment_env,
        verifier_env=verifier_env,
        has_pull_bucket=has_pull_bucket,
        bundled_input=bundled,
        support_files=support,
        grader=grader,
        grader_timeout_s=_grader_timeout(document, toml_path),
        metadata=dict(metadata),
    )


def _task_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        raise TaskError(root, "no such task directory" if not root.exists() else "not a directory")
    if (root / "task.toml").is_file():
        raise TaskError(root, f"is one task folder; give the folder that holds the task folders ({root.parent})")
    # Hidden and _private entries (caches, the data generator's scratch) are not tasks.
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if not folders:
        raise TaskError(root, f"holds no task folders (each task is a folder with {TASK_LAYOUT})")
    return folders


def _same_instructions(tasks: list[Task]) -> list[TaskError]:
    """The environment keys tasks by instruction, so two equal ones would shadow each other.

    Whitespace is folded first: instructions that differ only there read the same to anyone.
    """
    seen: dict[str, Task] = {}
    errors = []
    for task in tasks:
        key = " ".join(task.instruction.split())
        if key in seen:
            errors.append(
                TaskError(
                    task.folder / "instruction.md",
                    f"the same instruction as {seen[key].name}/instruction.md; instructions must be unique "
                    "(the environment looks tasks up by instruction)",
                )
            )
        else:
            seen[key] = task
    return errors


def load_task_set(root: str | os.PathLike[str] | None = None) -> list[Task]:
    """Every task under ``root`` (default: the shipped samples), sorted by name.

    All malformed tasks are reported together in one TaskSetError, so a task author
    fixes them in one pass.
    """
    root = Path(root) if root is not None else default_task_root()
    tasks: list[Task] = []
    errors: list[TaskError] = []
    for folder in _task_folders(root):
        try:
            tasks.append(load_task(folder))
        except TaskError as exc:
            errors.append(exc)
    errors += _same_instructions(tasks)
    if errors:
        raise TaskSetError(root, errors)
    return tasks
