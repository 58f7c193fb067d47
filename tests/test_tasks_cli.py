"""``smoldata-tui tasks``: the table, JSON Lines, exit 2 for a bad task root, task text shown literally."""

from __future__ import annotations

import io
import json

from smoldata_tui.tasks import load_task_set
from smoldata_tui.tasks.listing import run_tasks_listing

from .test_tasks_load import write_task


def test_tasks_lists_the_shipped_sample_set(cli):
    done = cli("tasks")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["task", "tier", "category", "data", "instruction"]
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert sorted(rows) == [task.name for task in load_task_set()]
    assert rows["sensor-fault-rate"].split()[1:4] == ["medium", "joins", "pull_bucket"]
    assert "bundled, 3 files  How many customers who signed up in the first quarter of 2024" in rows["churn-failed-payment"]
    assert lines[-1] == f"{len(rows)} tasks"


def test_tasks_json_gives_one_object_per_task_with_variable_names_only(cli, tmp_path):
    toml = '[metadata]\ndifficulty_tier = "hard"\n\n[environment.env]\nTOKEN = "${SMOLDATA_TEST_UNSET_TOKEN}"\n'
    write_task(tmp_path, "needs-token", toml=toml)
    write_task(tmp_path, "plain")
    done = cli("tasks", "--tasks", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    first, second = [json.loads(line) for line in done.stdout.splitlines()]
    assert first["name"] == "needs-token" and first["difficulty_tier"] == "hard" and first["data"] == "bundled"
    assert first["environment_env"] == ["TOKEN"] and first["unset_host_variables"] == ["SMOLDATA_TEST_UNSET_TOKEN"]
    assert first["input_files"] == ["data.csv"] and first["instruction"] == "Answer needs-token: what is a + b?\n"
    assert second["name"] == "plain" and second["host_variables"] == []


def test_a_missing_or_malformed_task_root_exits_2_with_one_clear_message(cli, tmp_path):
    missing = cli("tasks", "--tasks", str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == f"smoldata-tui tasks: {tmp_path / 'nope'}: no such task directory\n"
    (write_task(tmp_path, "broken") / "task.toml").write_text("[metadata\n")
    malformed = cli("tasks", "--tasks", str(tmp_path))
    assert malformed.returncode == 2 and "broken/task.toml: not valid TOML" in malformed.stderr
    assert "Traceback" not in malformed.stderr


def test_task_text_is_shown_literally_and_unset_variables_are_flagged(tmp_path):
    toml = '[environment.env]\nTOKEN = "${SMOLDATA_TEST_UNSET_TOKEN}"\n'
    write_task(tmp_path, "[red]odd", toml=toml, instruction="[bold]Sum[/bold] the \x1b[31mvalues\x1b[0m.\n")
    out = io.StringIO()
    assert run_tasks_listing(str(tmp_path), out=out, environ={}) == 0
    text = out.getvalue()
    assert "[red]odd " in text and "[bold]Sum[/bold] the ␛[31mvalues␛[0m." in text
    assert "\x1b" not in text
    assert "bundled, 1 file ($SMOLDATA_TEST_UNSET_TOKEN unset)" in text
