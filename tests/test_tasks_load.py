"""Loading task folders and task sets: the shipped samples, and every way a folder can be malformed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import smoldata_tui
from smoldata_tui.tasks import (
    TaskError,
    TaskSetError,
    default_task_root,
    load_task,
    load_task_set,
)

TASK_TOML = """\
version = "1.0"

[metadata]
difficulty_tier = "easy"
category = "testing"

[verifier.env]

[environment.env]
"""

# Grades 1 exactly when the answer is 42.
GRADER = """\
import json, sys
got = sys.stdin.read().strip()
print(json.dumps({"correctness": int(got == "42"), "expected": "42", "got": got}))
"""


def write_task(
    root: Path,
    name: str = "task-a",
    *,
    toml: str = TASK_TOML,
    instruction: str | None = None,
    files: dict[str, str | bytes] | None = None,
    grader: str = GRADER,
) -> Path:
    """A task folder under ``root``; ``files`` are paths relative to the folder."""
    folder = root / name
    if files is None:
        files = {"environment/input/data.csv": "a,b\n1,2\n"}
    contents: dict[str, str | bytes] = {
        "task.toml": toml,
        "instruction.md": instruction if instruction is not None else f"Answer {name}: what is a + b?\n",
        "tests/grader.py": grader,
        **files,
    }
    for relative, content in contents.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def test_the_shipped_sample_set_is_complete_and_in_the_package():
    root = default_task_root()
    assert root == Path(smoldata_tui.__file__).parent / "sample_tasks"
    tasks = load_task_set()
    names = [task.name for task in tasks]
    assert len(tasks) >= 4 and names == sorted(names)
    assert {"easy", "medium", "hard"} <= {task.difficulty_tier for task in tasks}
    assert any(task.has_pull_bucket for task in tasks) and any(task.bundled_input for task in tasks)
    assert len({task.instruction for task in tasks}) == len(tasks)
    for task in tasks:
        assert "/home/user/input" in task.instruction and "/workdir/answer.txt" in task.instruction, task.name
        assert task.grader.is_file() and task.category
        assert task.to_row() == {"instruction": task.instruction, "folder": str(task.folder)}


def test_load_task_reads_every_field(tmp_path):
    toml = """\
[metadata]
difficulty = 3
category = "joins"
tags = ["x"]

[verifier]
timeout_sec = 12.5

[verifier.env]
TOLERANCE = "0.5"

[environment.env]
HF_TOKEN = "${HF_TOKEN}"
INPUT_DIR = "/home/user/input"
"""
    files = {
        "environment/pull_bucket.py": "print('pull')\n",
        "environment/lib/helper.json": "{}",
        "environment/input/z.csv": "z\n",
        "environment/input/sub/a.csv": "a\n",
        "environment/__pycache__/pull_bucket.cpython-311.pyc": b"\x00junk",
    }
    task = load_task(write_task(tmp_path, "joiner", toml=toml, instruction="\n  First line.\nSecond.\n", files=files))
    assert task.name == "joiner" and task.folder == tmp_path / "joiner"
    assert task.instruction == "\n  First line.\nSecond.\n" and task.summary == "First line."
    assert task.difficulty_tier == "3" and task.category == "joins" and task.metadata["tags"] == ["x"]
    assert task.environment_env == {"HF_TOKEN": "${HF_TOKEN}", "INPUT_DIR": "/home/user/input"}  # raw, unresolved
    assert task.verifier_env == {"TOLERANCE": "0.5"} and task.grader_timeout_s == 12.5
    assert task.has_pull_bucket and task.data_source == "pull_bucket"
    assert task.bundled_input == ("sub/a.csv", "z.csv")
    assert task.support_files == ("lib/helper.json", "pull_bucket.py")  # no __pycache__
    assert task.grader == tmp_path / "joiner" / "tests" / "grader.py"


def _no_toml(folder: Path) -> None:
    (folder / "task.toml").unlink()


def _toml(text: str):
    return lambda folder: (folder / "task.toml").write_text(text, encoding="utf-8")


def _write(relative: str, content: str | bytes):
    def mutate(folder: Path) -> None:
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())

    return mutate


def _remove(relative: str):
    def mutate(folder: Path) -> None:
        path = folder / relative
        subprocess.run(["rm", "-rf", str(path)], check=True)

    return mutate


def _link_input(folder: Path) -> None:
    (folder / "environment/input/secret.csv").symlink_to(folder / "tests/grader.py")


MALFORMED = {
    "no task.toml": (_no_toml, "task.toml", "missing"),
    "invalid TOML": (_toml("[metadata\n"), "task.toml", "not valid TOML"),
    "env value not a string": (_toml("[environment.env]\nN = 3\n"), "task.toml", "[environment.env] N must be a string"),
    "bad env name": (_toml('[verifier.env]\n"A-B" = "x"\n'), "task.toml", "not a valid environment variable name"),
    "shell default": (_toml('[environment.env]\nT = "${HF_TOKEN:-x}"\n'), "task.toml", "the '$' at character 1 is not"),
    "env not a table": (_toml('[environment]\nenv = "x"\n'), "task.toml", "[environment.env] must be a table"),
    "metadata not a table": (_toml("metadata = 3\n"), "task.toml", "[metadata] must be a table"),
    "bad tier": (_toml("[metadata]\ndifficulty_tier = [1]\n"), "task.toml", "difficulty_tier must be a string"),
    "bad timeout": (_toml("[verifier]\ntimeout_sec = -1\n"), "task.toml", "timeout_sec must be a positive number"),
    "no instruction": (_remove("instruction.md"), "instruction.md", "missing"),
    "blank instruction": (_write("instruction.md", " \n\n"), "instruction.md", "is empty"),
    "instruction not UTF-8": (_write("instruction.md", b"caf\xe9"), "instruction.md", "not UTF-8"),
    "no environment": (_remove("environment"), "environment", "missing"),
    "nothing to stage": (_remove("environment/input"), "environment", "nothing to stage"),
    "no grader": (_remove("tests"), "tests/grader.py", "missing"),
    "symlink in input": (_link_input, "environment/input/secret.csv", "symbolic link"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_folder_is_rejected_naming_the_file_and_the_problem(tmp_path, case):
    mutate, relative, problem = MALFORMED[case]
    folder = write_task(tmp_path)
    mutate(folder)
    with pytest.raises(TaskError) as raised:
        load_task(folder)
    assert raised.value.path == folder / relative
    assert problem in raised.value.problem
    assert str(raised.value).startswith(f"{folder / relative}: ")


def test_a_set_names_every_malformed_task_at_once(tmp_path):
    write_task(tmp_path, "good")
    _no_toml(write_task(tmp_path, "bad-a"))
    _write("instruction.md", "")(write_task(tmp_path, "bad-b"))
    with pytest.raises(TaskSetError) as raised:
        load_task_set(tmp_path)
    assert [error.path for error in raised.value.errors] == [tmp_path / "bad-a/task.toml", tmp_path / "bad-b/instruction.md"]
    message = str(raised.value)
    assert "2 problems" in message and "bad-a/task.toml: missing" in message and "bad-b/instruction.md: is empty" in message


def test_instructions_must_be_unique_across_a_set(tmp_path):
    write_task(tmp_path, "one", instruction="Sum the   column.\n")
    write_task(tmp_path, "two", instruction="Sum the column.")  # the same words: the same prompt
    write_task(tmp_path, "three")
    with pytest.raises(TaskSetError) as raised:
        load_task_set(tmp_path)
    assert "two/instruction.md: the same instruction as one/instruction.md" in str(raised.value)


def test_a_set_is_sorted_and_skips_hidden_and_private_folders(tmp_path):
    for name in ("b-task", "a-task"):
        write_task(tmp_path, name)
    (tmp_path / ".cache").mkdir()
    (tmp_path / "_scratch").mkdir()
    (tmp_path / "README.md").write_text("notes")
    assert [task.name for task in load_task_set(tmp_path)] == ["a-task", "b-task"]


@pytest.mark.parametrize(
    "make_root, problem",
    [
        (lambda tmp: tmp / "missing", "no such task directory"),
        (lambda tmp: _write("file", "")(tmp) or tmp / "file", "not a directory"),
        (lambda tmp: tmp, "holds no task folders"),
        (lambda tmp: write_task(tmp), "is one task folder; give the folder that holds the task folders"),
    ],
    ids=["missing", "a file", "empty", "a single task"],
)
def test_a_bad_task_root_says_what_is_wrong(tmp_path, make_root, problem):
    root = make_root(tmp_path)
    with pytest.raises(TaskError) as raised:
        load_task_set(root)
    assert raised.value.path == root and problem in raised.value.problem


def test_the_tasks_layer_imports_neither_textual_nor_openenv():
    code = "import sys, smoldata_tui.tasks, smoldata_tui.tasks.listing; print(' '.join(sys.modules))"
    loaded = {name.split(".")[0] for name in subprocess.check_output([sys.executable, "-c", code], text=True).split()}
    assert not loaded & {"textual", "openenv", "daytona"}
