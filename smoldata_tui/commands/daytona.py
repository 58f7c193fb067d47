"""``smoldata-tui daytona ls`` and ``daytona gc``: the sandboxes we made, and deleting the orphans."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from smoldata_tui.sandbox.daytona import DaytonaCredentialsMissing, DaytonaSandboxBackend, SandboxInfo, has_api_key
from smoldata_tui.sandbox.daytona import live_runs
from smoldata_tui.sandbox.errors import SandboxError


def run_daytona_cli(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if not has_api_key():
        print(f"smoldata-tui daytona: {DaytonaCredentialsMissing()}", file=err)
        return 2
    backend = DaytonaSandboxBackend()
    try:
        sandboxes = backend.list_ours()
    except SandboxError as exc:
        print(f"smoldata-tui daytona: {exc}", file=err)
        return 1
    except Exception as exc:  # noqa: BLE001 - an SDK failure outside our retries: one line
        print(f"smoldata-tui daytona: listing sandboxes failed: {type(exc).__name__}: {exc}", file=err)
        return 1
    if args.daytona_action == "ls":
        return _list(sandboxes, out, as_json=args.json)
    return _collect(backend, sandboxes, out, err, yes=args.yes, all_owners=args.all_owners)


def _why_kept(sandbox: SandboxInfo, all_owners: bool) -> str | None:
    pid = sandbox.live_pid
    if pid is not None:
        return f"live run (pid {pid})"
    if sandbox.being_made:
        return f"still being created ({sandbox.state})"
    if not sandbox.mine and not all_owners:
        return f"owned by {sandbox.owner or 'nobody'} (use --all-owners)"
    return None


def _run_status(sandbox: SandboxInfo) -> str | None:
    """What became of the run that made the sandbox, as far as this machine can tell: ``running``
    while its process lives (or the sandbox is still being made), ``interrupted`` once it is gone
    without deleting it (SIGKILL, a crash); None for another owner's sandbox."""
    if sandbox.live_pid is not None or sandbox.being_made:
        return "running"
    return "interrupted" if sandbox.mine else None


def _list(sandboxes: list[SandboxInfo], out: TextIO, *, as_json: bool) -> int:
    if as_json:
        for sandbox in sandboxes:
            row = {"id": sandbox.id, "name": sandbox.name, "state": sandbox.state, "labels": sandbox.labels,
                   "created_at": sandbox.created_at, "live_pid": sandbox.live_pid,
                   "run_status": _run_status(sandbox)}  # fmt: skip
            print(json.dumps(row, ensure_ascii=False), file=out)
        return 0
    if not sandboxes:
        print("no Daytona sandboxes with label app=smoldata-tui", file=out)
        return 0
    rows = [("ID", "NAME", "STATE", "TASK", "RUN", "OWNER", "IN USE BY")]
    for sandbox in sandboxes:
        pid = sandbox.live_pid
        use = f"pid {pid}" if pid is not None else (_run_status(sandbox) if sandbox.mine else "other owner")
        rows.append((sandbox.id, sandbox.name, sandbox.state, sandbox.labels.get("task", ""),
                     sandbox.labels.get("run", ""), sandbox.owner, use))  # fmt: skip
    widths = [max(len(_safe(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(_safe(cell).ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out)
    return 0


def _collect(backend: DaytonaSandboxBackend, sandboxes: list[SandboxInfo], out: TextIO, err: TextIO,
             *, yes: bool, all_owners: bool) -> int:  # fmt: skip
    doomed = []
    for sandbox in sandboxes:
        reason = _why_kept(sandbox, all_owners)
        if reason:
            print(f"keeping {_safe(sandbox.id)} ({_safe(sandbox.name)}): {reason}", file=out)
        else:
            doomed.append(sandbox)
    if not doomed:
        print("nothing to delete", file=out)
        _forget_dead_runs(out)
        return 0
    for sandbox in doomed:
        print(f"orphan {_safe(sandbox.id)} ({_safe(sandbox.name)}, {sandbox.state}, run {_safe(sandbox.labels.get('run', '?'))})", file=out)
    if not yes:
        if not sys.stdin.isatty():
            print(f"{len(doomed)} sandbox(es) would be deleted: pass --yes to delete them", file=out)
            return 1
        answer = input(f"delete {len(doomed)} sandbox(es)? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("nothing deleted", file=out)
            return 1
    # Asking may have taken a while: a run may have started using one of them since.
    doomed = [sandbox for sandbox in doomed if sandbox.live_pid is None]
    failures = 0
    for sandbox_id, error in backend.delete([sandbox.id for sandbox in doomed]):
        if error:
            failures += 1
            print(f"could not delete {_safe(sandbox_id)}: {_safe(error)}", file=err)
        else:
            print(f"deleted {_safe(sandbox_id)}", file=out)
    _forget_dead_runs(out)
    return 1 if failures else 0


def _forget_dead_runs(out: TextIO) -> None:
    """The records of runs whose process is gone (SIGKILL skips their cleanup) go with them."""
    removed = live_runs.forget_dead()
    if removed:
        print(f"removed {removed} record(s) of dead runs from {live_runs.runs_dir()}", file=out)


def _safe(text: str) -> str:
    """Names and labels come from the server: printable, one line."""
    from smoldata_tui.trace.text import neutralize

    return neutralize(str(text), keep_newlines=False)
