"""The shipped sample tasks: staged, solved by their reference solutions, graded for real."""

from __future__ import annotations

import ast
import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from smoldata_tui.tasks import default_task_root, grade_answer, load_task, load_task_set, run_grader, stage_task

from .test_tasks_localdir import LocalDirSandbox, sandbox  # noqa: F401 - the fixture

ROOT = default_task_root()
NAMES = [task.name for task in load_task_set()]
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

# Answers that differ from the truth only in form (1) or in substance (0), per task.
ANSWERS = {
    "sales-top-region": {" west \n": 1, "'West.'": 1, "North": 0, "West region": 0},
    "employees-median-salary": {"$140,250.00\n": 1, "140250": 1, "140250.02": 0, "140250.00 USD": 0},
    "sensor-fault-rate": {"Depot\n": 1, "harbor": 0, "": 0},
    "inventory-restock": {
        "sku-1033, SKU-1030;SKU-1020\nSKU-1014,SKU-1011": 1,
        "SKU-1011,SKU-1014,SKU-1020,SKU-1030": 0,
        "SKU-1011,SKU-1011,SKU-1014,SKU-1020,SKU-1030,SKU-1033": 0,
    },
    "churn-failed-payment": {"11.0\n": 1, " 11 ": 1, "12": 0, "eleven": 0},
}


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_solution_grades_1_and_a_wrong_answer_0(name, sandbox):
    task = load_task(ROOT / name)
    stage_task(sandbox, task, environ={"PATH": "/usr/bin:/bin"})
    answer = sandbox.host_path("/workdir/answer.txt")
    answer.parent.mkdir(parents=True)
    solve = [sys.executable, str(task.folder / "solution/solve.py"), str(sandbox.host_path("/home/user/input")), str(answer)]
    subprocess.run(solve, check=True, timeout=30)
    right = grade_answer(sandbox, task)
    assert (right.env_reward, right.grader_error) == (1.0, None), right
    sandbox.write_text("/workdir/answer.txt", "definitely not it\n")
    assert grade_answer(sandbox, task).env_reward == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_graders_forgive_the_form_of_an_answer_but_not_its_substance(name):
    task = load_task(ROOT / name)
    got = {answer: run_grader(task, answer).correctness for answer in ANSWERS[name]}
    assert got == ANSWERS[name]


def test_the_tolerance_comes_from_verifier_env():
    task = load_task(ROOT / "employees-median-salary")
    stripped = subprocess.run(
        [sys.executable, str(task.grader), "--json"], input="140250.00", capture_output=True, text=True, env={}
    )
    assert stripped.returncode != 0 and "TOLERANCE is not set" in stripped.stderr


def test_graders_are_standalone_and_never_read_the_sandbox():
    for name in NAMES:
        source = (ROOT / name / "tests/grader.py").read_text()
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
        }
        assert imported <= {"json", "sys", "os", "math", "re"}, (name, imported)
        assert "/home/user" not in source and "/workdir" not in source, name


def test_the_data_generator_makes_exactly_the_shipped_files(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "_make_data.py"), str(tmp_path)], check=True, capture_output=True, timeout=60)
    made = {path.relative_to(tmp_path): path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    shipped_data = {
        path.relative_to(ROOT)
        for path in ROOT.glob("*/environment/**/*")
        if path.is_file() and path.name != "pull_bucket.py" and "__pycache__" not in path.parts
    }
    assert set(made) == shipped_data
    for relative, content in made.items():
        assert (ROOT / relative).read_bytes() == content, f"{relative} is stale: rerun _make_data.py"


def test_every_shipped_task_file_is_package_data():
    patterns = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["smoldata_tui"]
    package = ROOT.parent
    files = [path for path in ROOT.rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    left_out = [
        str(path.relative_to(package))
        for path in files
        if not any(fnmatch.fnmatch(str(path.relative_to(package)), pattern) for pattern in patterns)
    ]
    assert files and not left_out, f"pip install would leave out {left_out}"
