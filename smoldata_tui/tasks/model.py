"""A loaded task folder, and the fixed paths the SmolDataEnvs environment uses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SANDBOX_INPUT_DIR = "/home/user/input"  # where the agent finds the data
SANDBOX_ANSWER_PATH = "/workdir/answer.txt"  # where the agent writes its answer
PULL_BUCKET = "pull_bucket.py"  # environment/<this>: downloads the data inside the sandbox
DEFAULT_GRADER_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Task:
    """One Harbor task folder as SmolDataEnvs lays it out (see docs/task-format.md).

    ``environment_env`` and ``verifier_env`` hold the raw values of task.toml: ``${VAR}``
    references to host variables are resolved only when staging or grading, so a loaded
    task never carries a secret.
    """

    name: str
    folder: Path
    instruction: str
    difficulty_tier: str | None
    environment_env: dict[str, str]
    verifier_env: dict[str, str]
    has_pull_bucket: bool
    bundled_input: tuple[str, ...]  # POSIX paths relative to environment/input/
    support_files: tuple[str, ...]  # environment/ files outside input/, relative to environment/
    grader: Path
    grader_timeout_s: float = DEFAULT_GRADER_TIMEOUT_S
    metadata: dict[str, Any] = field(default_factory=dict)  # the whole [metadata] table

    @property
    def task_toml(self) -> Path:
        return self.folder / "task.toml"

    @property
    def environment_dir(self) -> Path:
        return self.folder / "environment"

    @property
    def input_dir(self) -> Path:
        return self.environment_dir / "input"

    @property
    def category(self) -> str | None:
        value = self.metadata.get("category")
        return value if isinstance(value, str) else None

    @property
    def data_source(self) -> str:
        """``pull_bucket`` when the sandbox downloads its data, else ``bundled``."""
        return "pull_bucket" if self.has_pull_bucket else "bundled"

    @property
    def summary(self) -> str:
        """The instruction's first non-blank line, for lists."""
        for line in self.instruction.splitlines():
            if line.strip():
                return line.strip()
        return ""

    def to_row(self) -> dict[str, str]:
        """The row the environment's TaskFactory takes: it keys tasks by instruction."""
        return {"instruction": self.instruction, "folder": str(self.folder)}
