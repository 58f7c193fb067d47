"""Output that cannot be written is not a bug: a full disk is one line on stderr and exit 74, a
reader that goes away (``| head -1``) ends the command quietly with 141, as Unix tools end; a
dependency that fails to import is one line, never a chained traceback. The real CLI, in a fresh
interpreter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT, SAMPLES

CLEAN = str(SAMPLES / "clean_pass.jsonl")
TOOL_ERRORS = str(SAMPLES / "tool_errors.jsonl")


def _run(args: list[str], *, stdout, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "smoldata_tui", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["check", "--json", str(SAMPLES)],
        ["check", str(SAMPLES)],
        ["check", "--summary", str(SAMPLES)],
        ["tasks", "--json"],
        ["diff", "--json", CLEAN, TOOL_ERRORS],
    ],
)
def test_a_full_disk_is_one_line_and_exit_74(args):
    with open("/dev/full", "w") as full:
        process = _run(args, stdout=full)
        _, err = process.communicate(timeout=120)
    stderr = err.decode()
    assert process.returncode == 74, stderr
    assert stderr.splitlines() == [f"smoldata-tui {args[0]}: cannot write the output: No space left on device"]


@pytest.mark.parametrize("extra", [["--json"], []])
def test_a_reader_that_goes_away_ends_it_quietly_with_141(tmp_path, extra):
    # More output than a pipe holds (64 KiB), so that writing goes on after the reader left.
    for number in range(2000):
        shutil.copy(CLEAN, tmp_path / f"trace-{number:04}.jsonl")
    process = _run(["check", "--no-cache", *extra, str(tmp_path)], stdout=subprocess.PIPE)
    assert process.stdout.readline()  # what `| head -1` reads before it exits
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert stderr == ""  # no traceback, no "Exception ignored ... BrokenPipeError"


def test_a_dependency_that_fails_to_import_is_one_line(tmp_path):
    (tmp_path / "orjson.py").write_text("raise ImportError('orjson is broken here')\n")
    process = _run(["check", CLEAN], stdout=subprocess.PIPE, env={"PYTHONPATH": str(tmp_path)})
    out, err = process.communicate(timeout=60)
    stderr = err.decode()
    assert process.returncode == 3
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    assert "orjson is broken here" in stderr and "cannot be loaded" in stderr
