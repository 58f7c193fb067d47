"""The exceptions of the tasks layer: each names the file and the problem in one message.

Callers (the CLI, the UI) show ``str(error)`` as it is; no traceback is needed to act on it.
Messages never hold the value of a host variable, only its name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


class TaskError(Exception):
    """A task folder or task set smoldata-tui cannot use: ``<path>: <problem>``."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class TaskSetError(TaskError):
    """Some tasks of a set are malformed; ``errors`` holds one :class:`TaskError` each."""

    def __init__(self, root: str | Path, errors: Sequence[TaskError]) -> None:
        self.errors = list(errors)
        root = Path(root)
        lines = [f"{len(self.errors)} problem{'s' if len(self.errors) != 1 else ''} in this task set:"]
        for error in self.errors:
            # Paths relative to the root keep each line short and still name the task and file.
            where = error.path.relative_to(root) if error.path.is_relative_to(root) else error.path
            lines.append(f"  - {where}: {error.problem}")
        super().__init__(root, "\n".join(lines))


class UnknownTask(TaskError):
    """A task named that is no folder of the task set, or a path instead of a name. The message is
    said as it is (no ``<path>:`` before it): it names the set's folder and the tasks in it."""

    def __init__(self, root: str | Path, message: str) -> None:
        self.path = Path(root)
        self.problem = message
        Exception.__init__(self, message)


class UnsetVariableError(TaskError):
    """An env table references host variables that are unset or empty (their names, never values)."""

    def __init__(self, path: str | Path, table: str, variables: Sequence[str]) -> None:
        self.table = table
        self.variables = sorted(set(variables))
        names = ", ".join(f"${name}" for name in self.variables)
        verb = "is" if len(self.variables) == 1 else "are"
        super().__init__(path, f"[{table}] needs {names}, which {verb} not set (or empty) on this host")


class StagingError(TaskError):
    """Putting a task's data into a sandbox failed; ``path`` is the task file involved."""
