"""The agent's shell-tool commands running in a sandbox, from its process list, and ending one.

OpenCode writes a ``tool_use`` only when a call ends, so a command that hangs shows in no event:
the sandbox's processes are the only place it can be seen (the live screen's "tool running" row)
and the only place it can be stopped. Ending a command's processes makes OpenCode's shell tool
return (with the signal's exit status in its output) and the agent goes on, as it would after a
command that failed: :meth:`Episode.cancel_running_calls` does that and records it.

Works on both backends through the sandbox protocol's ``exec``: every command runs in the
sandbox's PID namespace, so the listing and the kill see exactly the agent's processes.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# pid, parent pid, elapsed seconds and command line of every process; `ps` where there is one,
# /proc otherwise (then without elapsed times).
LIST_PROCESSES = (
    "ps -eo pid=,ppid=,etimes=,args= 2>/dev/null || for d in /proc/[0-9]*; do "
    "read -r pid _ _ ppid _ < $d/stat 2>/dev/null && c=$(tr '\\0' ' ' < $d/cmdline 2>/dev/null) "
    "&& [ -n \"$c\" ] && echo \"$pid $ppid - $c\"; done"
)
_SHELLS = ("bash", "sh", "zsh", "dash")
KILL_GRACE_S = 2  # between TERM and KILL: a command that traps TERM still ends


@dataclass(frozen=True)
class RunningCommand:
    """A command the agent's shell tool is running, as the sandbox's process list shows it."""

    command: str
    seconds: float | None  # how long it has run, when the listing says
    pids: tuple[int, ...] = field(default=(), compare=False)  # its shell and every process below it
    # False: one simple command bash ran in its own place (exec), so no shell is left to exit. OpenCode
    # 1.18.31's bash tool notices only a shell that exits, not a process a signal ended: ending such a
    # command would not make the tool return before its own timeout (tests/test_cancel_call.py).
    in_shell: bool = field(default=True, compare=False)


ProcessProbe = Callable[[], Sequence[RunningCommand]]


def shell_tool_commands(listing: str) -> list[RunningCommand]:
    """The shell-tool commands (``bash -c CMD``) that OpenCode started, in a process listing. A
    command that is one simple command (``sleep 90``, ``python3 x.py``) has no shell left to see:
    bash ran it in its own place (exec), so it is OpenCode's own child, and is found as that."""
    processes: dict[str, tuple[str, str, str]] = {}  # pid -> (ppid, elapsed, args)
    for line in listing.splitlines():
        fields = line.split(None, 3)
        if len(fields) == 4:
            processes[fields[0]] = (fields[1], fields[2], fields[3])
    # OpenCode itself: its binary, or a script of that name run by an interpreter
    agents = {pid for pid, (_, _, args) in processes.items()
              if any(word.rsplit("/", 1)[-1] == "opencode" for word in args.split(" ", 2)[:2])}  # fmt: skip
    found = []
    for pid, (ppid, elapsed, args) in processes.items():
        words = args.split(" ", 2)
        if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in ("-c", "-lc"):
            if not _descends_from(pid, agents, processes):
                continue
            parent = processes.get(ppid)
            if parent is not None and parent[2] == args:
                continue  # the command's own fork (a subshell, or a child not yet exec'd): one command, not two
            command, in_shell = words[2].strip(), True
        elif ppid in agents and pid not in agents:
            command, in_shell = args.strip(), False  # exec'd in its shell's place
        else:
            continue
        tree = (pid, *(other for other in processes if _descends_from(other, {pid}, processes)))
        found.append(RunningCommand(command, float(elapsed) if elapsed.isdigit() else None,
                                    tuple(int(each) for each in tree if each.isdigit()), in_shell))  # fmt: skip
    return found


def _descends_from(pid: str, ancestors: set[str], processes: dict[str, tuple[str, str, str]]) -> bool:
    seen = set()
    while pid in processes and pid not in seen:
        seen.add(pid)
        pid = processes[pid][0]
        if pid in ancestors:
            return True
    return False


def probe_sandbox(sandbox: object) -> list[RunningCommand]:
    """The shell-tool commands running in ``sandbox`` now ([] when it cannot say)."""
    exec_ = getattr(sandbox, "exec", None)
    if exec_ is None:
        return []
    try:
        result = exec_(LIST_PROCESSES, timeout=10)
    except Exception:  # noqa: BLE001 - a guess that fails is no guess; the row says "thinking"
        return []
    return shell_tool_commands(result.stdout or "") if result.exit_code == 0 else []


def end_commands(sandbox: object, commands: Sequence[RunningCommand]) -> None:
    """End ``commands`` (one exec). The processes below each command's shell get TERM first, so the
    shell itself exits with their status, as after any failed command: OpenCode 1.18.31's shell
    tool does not notice a shell that a signal ended and waits for its own timeout (120 s). A
    shell still there after the grace period (it is what hangs: a builtin loop) gets TERM, and
    whatever is left then KILL."""
    shells = " ".join(str(command.pids[0]) for command in commands if command.pids)
    below = " ".join(str(pid) for command in commands for pid in command.pids[1:])
    everything = f"{shells} {below}".strip()
    if not everything:
        return
    wait = (f"i=0; while [ $i -lt {KILL_GRACE_S * 10} ]; do alive=0; for p in {{pids}}; do "
            "kill -0 $p 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep 0.1; i=$((i+1)); done")  # fmt: skip
    script = "; ".join(part for part in (
        f"kill -TERM {below} 2>/dev/null" if below else "",
        wait.format(pids=shells) if below else "",
        f"kill -TERM {shells} 2>/dev/null",
        wait.format(pids=everything),
        f"kill -KILL {everything} 2>/dev/null; exit 0",
    ) if part)  # fmt: skip
    sandbox.exec(f"sh -c {shlex.quote(script)}", timeout=2 * KILL_GRACE_S + 20)
