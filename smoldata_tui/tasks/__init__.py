"""Harbor task folders: load, list, stage into a sandbox, grade on the host.

Core layer: no Textual, and openenv only inside :func:`to_verify_result`.
The folder format is in docs/task-format.md.
"""

from smoldata_tui.tasks.envvars import host_variables, resolve_environment_env, resolve_verifier_env
from smoldata_tui.tasks.errors import StagingError, TaskError, TaskSetError, UnknownTask, UnsetVariableError
from smoldata_tui.tasks.grade import GradeResult, grade_answer, read_answer, run_grader, to_verify_result
from smoldata_tui.tasks.load import default_task_root, load_task, load_task_set
from smoldata_tui.tasks.model import PULL_BUCKET, SANDBOX_ANSWER_PATH, SANDBOX_INPUT_DIR, Task
from smoldata_tui.tasks.stage import stage_task

__all__ = [
    "PULL_BUCKET",
    "SANDBOX_ANSWER_PATH",
    "SANDBOX_INPUT_DIR",
    "GradeResult",
    "StagingError",
    "Task",
    "TaskError",
    "TaskSetError",
    "UnknownTask",
    "UnsetVariableError",
    "default_task_root",
    "grade_answer",
    "host_variables",
    "load_task",
    "load_task_set",
    "read_answer",
    "resolve_environment_env",
    "resolve_verifier_env",
    "run_grader",
    "stage_task",
    "to_verify_result",
]
