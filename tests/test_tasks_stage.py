"""Staging for real into a LocalDirSandbox: bundled data, pull_bucket.py, host variables, failures."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from smoldata_tui.tasks import StagingError, UnsetVariableError, default_task_root, load_task, stage_task
from smoldata_tui.tasks.stage import STAGING_DIR

from .test_tasks_load import write_task
from .test_tasks_localdir import LocalDirSandbox, sandbox  # noqa: F401 - the fixture

GRADER_MARK = "GRADER-ONLY-MARK-7f3a"
SECRET = "hf_s3cretValue0123456789"
PULL_TOML = """\
[environment.env]
TOKEN = "${MY_TOKEN}"
INPUT_DIR = "/home/user/input"
"""
HOST = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MY_TOKEN": SECRET}


def every_file(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def pull_task(tmp_path: Path, script: str) -> object:
    files = {"environment/pull_bucket.py": script, "environment/input/IGNORED.csv": "x\n"}
    return load_task(write_task(tmp_path, "pulled", toml=PULL_TOML, files=files))


def test_bundled_input_arrives_byte_for_byte_and_tests_never_enter(tmp_path, sandbox):
    binary = bytes(range(256)) * 3
    files = {
        "environment/input/data.csv": "city,temp\r\nZürich,21.5\n",
        "environment/input/nested/deeper/notes.md": "# notes\n",
        "environment/input/blob.bin": binary,
        "environment/input/nul.dat": "a\x00b",  # valid UTF-8, but text uploads must not carry NUL
        "solution/solve.py": f"print('{GRADER_MARK}')\n",
    }
    task = load_task(write_task(tmp_path, files=files, grader=f"print('{GRADER_MARK}')\n"))
    texts: list[str] = []
    write_text = sandbox.write_text
    sandbox.write_text = lambda path, content: (texts.append(content), write_text(path, content))[1]
    messages: list[str] = []
    assert stage_task(sandbox, task, environ={}, progress=messages.append) == 4
    expected = {
        "data.csv": "city,temp\r\nZürich,21.5\n".encode(),
        "nested/deeper/notes.md": b"# notes\n",
        "blob.bin": binary,
        "nul.dat": b"a\x00b",
    }
    assert every_file(sandbox.root / "home/user/input") == expected
    assert not any("\x00" in text for text in texts)
    everything = every_file(sandbox.root)
    assert set(everything) == {f"home/user/input/{name}" for name in expected}
    assert not any(GRADER_MARK.encode() in content for content in everything.values())
    assert not any("tests" in path or "solution" in path for path in sandbox.writes)
    assert messages == ["uploading 4 input file(s) to /home/user/input", "/home/user/input ready: 4 file(s)"]


def test_the_sample_pull_bucket_task_pulls_its_objects_and_leaves_no_scratch(sandbox):
    task = load_task(default_task_root() / "sensor-fault-rate")
    messages: list[str] = []
    count = stage_task(sandbox, task, environ={"PATH": os.environ["PATH"]}, progress=messages.append)
    bucket = [json.loads(line) for line in (task.environment_dir / "bucket.jsonl").read_text().splitlines()]
    assert count == len(bucket) == 8
    staged = every_file(sandbox.root / "home/user/input")
    assert staged == {item["key"]: item["content"].encode() for item in bucket}
    assert "readings/2024-06-09.csv" in staged
    assert set(every_file(sandbox.root)) == {f"home/user/input/{key}" for key in staged}  # scratch removed
    assert any("running pull_bucket.py in the sandbox with INPUT_DIR set" == message for message in messages)


def test_pull_bucket_runs_with_the_resolved_env_and_the_secret_stays_out_of_logs(tmp_path, sandbox):
    script = """\
import hashlib, os, pathlib
target = pathlib.Path(os.environ["INPUT_DIR"]) / "proof.txt"
target.parent.mkdir(parents=True, exist_ok=True)
target.write_text(hashlib.sha256(os.environ["TOKEN"].encode()).hexdigest())
"""
    task = pull_task(tmp_path, script)
    messages: list[str] = []
    assert stage_task(sandbox, task, environ=HOST, progress=messages.append) == 1
    proof = (sandbox.root / "home/user/input/proof.txt").read_text()
    assert proof == hashlib.sha256(SECRET.encode()).hexdigest()  # the script got the real value
    assert not (sandbox.root / "home/user/input/IGNORED.csv").exists()  # pull_bucket wins over input/
    assert "with INPUT_DIR, TOKEN set" in " ".join(messages)
    assert not any(SECRET in text for text in messages + sandbox.commands)


def test_a_failing_pull_bucket_is_a_staging_error_with_its_output_but_not_the_secret(tmp_path, sandbox):
    script = "import os, sys\nprint('auth failed for token', os.environ['TOKEN'], file=sys.stderr)\nsys.exit(3)\n"
    task = pull_task(tmp_path, script)
    with pytest.raises(StagingError) as raised:
        stage_task(sandbox, task, environ=HOST)
    message = str(raised.value)
    assert raised.value.path == task.environment_dir / "pull_bucket.py"
    assert "pull_bucket.py exited with status 3 in the sandbox" in message
    assert "auth failed for token [$MY_TOKEN]" in message and SECRET not in message
    assert not (sandbox.root / STAGING_DIR.lstrip("/")).exists()  # scratch removed on failure too


def test_an_unset_host_variable_refuses_before_touching_the_sandbox(tmp_path, sandbox):
    task = pull_task(tmp_path, "raise SystemExit('must not run')\n")
    with pytest.raises(UnsetVariableError, match=r"needs \$MY_TOKEN, which is not set"):
        stage_task(sandbox, task, environ={"PATH": os.environ["PATH"]})
    assert sandbox.commands == [] and sandbox.writes == []


def test_staging_that_leaves_the_input_empty_fails_clearly(tmp_path, sandbox):
    task = pull_task(tmp_path, "print('downloaded nothing')\n")
    with pytest.raises(StagingError, match="staging left /home/user/input empty in the sandbox"):
        stage_task(sandbox, task, environ=HOST)
