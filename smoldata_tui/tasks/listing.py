"""``smoldata-tui tasks``: list a task set as a table, or as JSON Lines; and find one task of a set
by its name (:func:`find_task`: ``run --task``, the fork form).

Task text is shown through ``rich.text.Text`` after :func:`clip`, so a ``[bold]`` or an
escape sequence in an instruction is printed as it is, never interpreted.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.text import Text

from smoldata_tui.tasks.envvars import host_variables
from smoldata_tui.tasks.errors import TaskError, UnknownTask
from smoldata_tui.tasks.load import default_task_root, load_task, load_task_set
from smoldata_tui.tasks.model import Task
from smoldata_tui.trace.text import clip, neutralize

EXIT_OK, EXIT_USAGE = 0, 2


def find_task(name: str, tasks_dir: str | None) -> Task:
    """The task folder ``name`` of the set in ``tasks_dir`` (default: the shipped samples), loaded.
    Raises :class:`~smoldata_tui.tasks.errors.UnknownTask` when ``name`` is a path or no folder of
    the set (its message lists the set's tasks), TaskError when the folder is no usable task."""
    root = Path(tasks_dir) if tasks_dir else default_task_root()
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UnknownTask(root, f"--task takes the name of a task folder inside {root} (e.g. sales-top-region), not a path: {name!r}")
    folder = root / name
    if not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))) if root.is_dir() else []
        hint = f" (tasks in {root}: {', '.join(known)})" if known else ""
        raise UnknownTask(root, f"no task {name!r} in {root}{hint}")
    return load_task(folder)


def _unset(task: Task, environ: Mapping[str, str]) -> list[str]:
    """Host variables staging needs that are not set here (staging would refuse)."""
    return [name for name in host_variables(task.environment_env) if not environ.get(name)]


def task_json(task: Task, environ: Mapping[str, str]) -> dict:
    """What a script needs about a task; variable names only, never values."""
    return {
        "name": task.name,
        "folder": str(task.folder),
        "difficulty_tier": task.difficulty_tier,
        "category": task.category,
        "data": task.data_source,
        "input_files": list(task.bundled_input),
        "environment_env": sorted(task.environment_env),
        "verifier_env": sorted(task.verifier_env),
        "host_variables": sorted(set(host_variables(task.environment_env) + host_variables(task.verifier_env))),
        "unset_host_variables": _unset(task, environ),
        "instruction": task.instruction,
    }


def _data_cell(task: Task, environ: Mapping[str, str]) -> Text:
    if task.has_pull_bucket:
        cell = Text("pull_bucket", style="cyan")
    else:
        count = len(task.bundled_input)
        cell = Text(f"bundled, {count} file{'s' if count != 1 else ''}")
    unset = _unset(task, environ)
    if unset:
        cell.append(f" (${', $'.join(unset)} unset)", style="bold red")
    return cell


def _print_table(tasks: list[Task], root: str, out: TextIO, environ: Mapping[str, str]) -> None:
    """Aligned plain columns; only the instruction is cut to fit (a pipe gets room for it)."""
    console = Console(file=out, highlight=False)
    rows = [
        [
            Text(clip(task.name, 60), style="bold"),
            Text(clip(task.difficulty_tier or "—", 20)),
            Text(clip(task.category or "—", 30)),
            _data_cell(task, environ),
        ]
        for task in tasks
    ]
    headers = ["task", "tier", "category", "data"]
    widths = [max([len(header)] + [len(row[i].plain) for row in rows]) for i, header in enumerate(headers)]
    fixed = sum(widths) + 2 * len(widths)
    if not console.is_terminal:
        console.width = max(console.width, fixed + 120)  # a pipe or a CI log: room for the sentence
    room = max(20, console.width - fixed)

    def line(cells: list[Text], last: Text) -> Text:
        text = Text()
        for cell, width in zip(cells, widths):
            text.append_text(cell)
            text.append(" " * (width - len(cell.plain) + 2))
        last.truncate(room, overflow="ellipsis")
        text.append_text(last)
        return text

    console.print(Text(clip(root, 300), style="bold"))
    header = line([Text(h) for h in headers], Text("instruction"))
    header.stylize("bold underline")
    console.print(header, no_wrap=True, crop=False)
    for task, row in zip(tasks, rows):
        console.print(line(row, Text(clip(task.summary, 300))), no_wrap=True, crop=False)
    console.print(Text(f"{len(tasks)} task{'s' if len(tasks) != 1 else ''}", style="dim"))


def run_tasks_listing(
    root: str | None,
    *,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    """List the tasks under ``root`` (default: the shipped samples); exit 2 for a bad task root."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        tasks = load_task_set(root)
    except TaskError as exc:
        print(f"smoldata-tui tasks: {neutralize(str(exc))}", file=err)
        return EXIT_USAGE
    if as_json:
        for task in tasks:
            out.write(json.dumps(task_json(task, environ), ensure_ascii=False) + "\n")
        return EXIT_OK
    _print_table(tasks, root if root is not None else str(default_task_root()), out, environ)
    return EXIT_OK
