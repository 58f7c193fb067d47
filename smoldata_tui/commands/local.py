"""``smoldata-tui local ls`` / ``local gc``: what ``daytona ls`` / ``daytona gc`` are for Daytona,
for the local bubblewrap sandboxes.

A run ends its sandbox on every exit path short of SIGKILL (or a crash of the interpreter). What
such a death leaves: the sandbox's folder under ``$XDG_CACHE_HOME/smoldata-tui/sandboxes`` (its
root holds the agent's files and ``opencode.json`` with the endpoint key), maybe its processes,
and a ``run.meta.json`` still saying ``running``. ``gc`` finds the sandboxes whose owner is gone
(their lock is free: an owner in another PID namespace or container counts as alive; see
:mod:`smoldata_tui.sandbox.registry`), ends their processes, removes their folders while holding
their lock, and marks the saved episodes of dead owners ``interrupted``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TextIO

from smoldata_tui.sandbox import registry
from smoldata_tui.sandbox.local import default_base_dir
from smoldata_tui.store.metadata import effective_status, is_trace_name, lock_path_for, metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.store.metadata_writer import mark_interrupted
from smoldata_tui.store.owner import remove_stale_run_lock
from smoldata_tui.trace.text import neutralize


def _safe(text: object) -> str:
    return neutralize(str(text), keep_newlines=False)


def _age(created: float | None) -> str:
    if created is None:
        return "?"
    minutes = max(0, int(time.time() - created)) // 60
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def interrupted_episodes(runs: Path) -> list[Path]:
    """The ``run.meta.json`` files under ``runs`` that say running while their process is gone."""
    if not runs.is_dir():
        return []
    found = []
    for trace in sorted(runs.rglob("*.jsonl")):
        meta = metadata_path_for(trace)
        if is_trace_name(trace.name) and meta.is_file():
            metadata = load_metadata(meta)
            if metadata is not None and metadata.status == "running" and effective_status(metadata) == "interrupted":
                found.append(meta)
    return found


def run_local_cli(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    base_dir = default_base_dir()
    sandboxes = registry.list_sandboxes(base_dir)
    if args.local_action == "ls":
        return _list(sandboxes, base_dir, out, as_json=args.json)
    return _collect(sandboxes, Path(args.save), out, err, yes=args.yes)


def _list(sandboxes: list[registry.SandboxDir], base_dir: Path, out: TextIO, *, as_json: bool) -> int:
    if as_json:
        for sandbox in sandboxes:
            record = {"id": sandbox.sandbox_id, "path": str(sandbox.control_dir), "owner_pid": sandbox.owner_pid,
                      "owner_alive": sandbox.owner_alive, "created": sandbox.created,
                      "task": sandbox.metadata.get("task"), "run": sandbox.metadata.get("run"),
                      "live_processes": sandbox.live_processes()}  # fmt: skip
            print(json.dumps(record), file=out)
        return 0
    if not sandboxes:
        print(f"no local sandboxes in {base_dir}", file=out)
        return 0
    rows = [("ID", "AGE", "TASK", "RUN", "OWNER", "STATE")]
    for sandbox in sandboxes:
        state = "in use" if sandbox.owner_alive else "leftover (owner gone)"
        rows.append((sandbox.sandbox_id, _age(sandbox.created), sandbox.metadata.get("task", ""),
                     sandbox.metadata.get("run", ""), f"pid {sandbox.owner_pid}", state))  # fmt: skip
    widths = [max(len(_safe(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(_safe(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out)
    return 0


def _collect(sandboxes: list[registry.SandboxDir], runs: Path, out: TextIO, err: TextIO, *, yes: bool) -> int:
    doomed = []
    for sandbox in sandboxes:
        if sandbox.owner_alive:
            print(f"keeping {sandbox.sandbox_id}: in use by pid {sandbox.owner_pid}", file=out)
        else:
            doomed.append(sandbox)
    episodes = interrupted_episodes(runs)
    for sandbox in doomed:
        live = sandbox.live_processes()
        print(f"leftover {sandbox.sandbox_id} (task {_safe(sandbox.metadata.get('task', '?'))}, run "
              f"{_safe(sandbox.metadata.get('run', '?'))}, {_age(sandbox.created)} old, owner pid {sandbox.owner_pid} gone"
              + (f", {len(live)} process(es) still running" if live else "") + ")", file=out)  # fmt: skip
    for meta in episodes:
        print(f"interrupted episode {_safe(meta.parent)} (saved as running; its process is gone)", file=out)
    if not doomed and not episodes:
        print("nothing to clean up", file=out)
        return 0
    if not yes:
        what = f"{len(doomed)} sandbox(es) would be removed and {len(episodes)} episode(s) marked interrupted"
        if not sys.stdin.isatty():
            print(f"{what}: pass --yes to do it", file=out)
            return 1
        if input(f"{what}. Go ahead? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing changed", file=out)
            return 1
    failures = 0
    for sandbox in doomed:
        try:
            if registry.remove_leftover(sandbox):
                print(f"removed {sandbox.sandbox_id}", file=out)
            else:
                print(f"kept {sandbox.sandbox_id}: its lock is held (its owner lives, or another gc removes it)", file=out)
        except OSError as exc:
            failures += 1
            print(f"could not remove {_safe(sandbox.control_dir)}: {_safe(exc.strerror or exc)}", file=err)
    for meta in episodes:
        try:
            if mark_interrupted(meta):
                remove_stale_run_lock(lock_path_for(meta))
                print(f"marked {_safe(meta.parent)} interrupted", file=out)
        except OSError as exc:
            failures += 1
            print(f"could not mark {_safe(meta.parent)}: {_safe(exc.strerror or exc)}", file=err)
    if failures:
        print(f"local gc: {failures} thing(s) could not be cleaned up (said above); remove them by hand", file=err)
    return 1 if failures else 0
