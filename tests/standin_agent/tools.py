"""The tools the stand-in OpenCode runs (tests/standin_agent/agent.py), with the outputs, titles,
metadata and errors OpenCode 1.18.31's own tools give (tests/test_standin_agent.py compares them).
Each takes the call's arguments and the working directory and returns (output, title, metadata),
or raises :class:`ToolError` for a call OpenCode answers with ``status: "error"``."""

from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess

_BASH_METADATA_OUTPUT_LIMIT = 30_000
_BASH_DEFAULT_TIMEOUT_MS = 120_000
_TIMEOUT_NOTE = ("\n\n<shell_metadata>\nshell tool terminated command after exceeding timeout {timeout_ms} ms. If this "
                 "command is expected to take longer and is not waiting for interactive input, retry with a larger "
                 "timeout value in milliseconds.\n</shell_metadata>")


class ToolError(Exception):
    """A call OpenCode answers with ``status: "error"``."""


def _relative(path: str) -> str:
    return os.path.relpath(path, "/")


def _absolute(path: str, cwd: str) -> str:
    return path if os.path.isabs(path) else os.path.join(cwd, path)


def _bash(arguments: dict, cwd: str):
    """As OpenCode 1.18.31 runs a command: ``bash -c`` a child of the agent in a session of its own
    (so a kill of the agent's process group does not reach it), with ``OPENCODE=1`` and
    ``OPENCODE_PID``; past its timeout the whole session is killed and the output says so."""
    command = arguments.get("command")
    if not isinstance(command, str):
        raise ToolError("The bash tool was called with invalid arguments: command must be a string.")
    timeout_ms = arguments.get("timeout") or _BASH_DEFAULT_TIMEOUT_MS
    environment = {**os.environ, "OPENCODE": "1", "OPENCODE_PID": str(os.getpid())}
    proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=environment, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        data, _ = proc.communicate(timeout=timeout_ms / 1000)
        exit_code, suffix = proc.returncode, ""
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        data, _ = proc.communicate()
        exit_code, suffix = None, _TIMEOUT_NOTE.format(timeout_ms=timeout_ms)
    output = (data.decode("utf-8", "replace") or "(no output)") + suffix
    shown = output if len(output) <= _BASH_METADATA_OUTPUT_LIMIT else output[:_BASH_METADATA_OUTPUT_LIMIT] + "\n\n..."
    return output, command, {"output": shown, "exit": exit_code, "truncated": False}


def _write(arguments: dict, cwd: str):
    path, content = arguments.get("filePath"), arguments.get("content")
    if not isinstance(path, str) or not isinstance(content, str):
        raise ToolError("The write tool was called with invalid arguments: filePath and content must be strings.")
    path = _absolute(path, cwd)
    existed = os.path.exists(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(content)
    return "Wrote file successfully.", _relative(path), {"diagnostics": {}, "filepath": path, "exists": existed,
                                                         "truncated": False}


def _read(arguments: dict, cwd: str):
    path = arguments.get("filePath")
    if not isinstance(path, str):
        raise ToolError("The read tool was called with invalid arguments: filePath must be a string.")
    path = _absolute(path, cwd)
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().split("\n")
    except FileNotFoundError:
        raise ToolError(f"File not found: {path}") from None
    except OSError as exc:
        raise ToolError(str(exc)) from None
    if lines and lines[-1] == "":
        lines.pop()
    offset = max(int(arguments.get("offset") or 1), 1)
    shown = lines[offset - 1: offset - 1 + int(arguments.get("limit") or 2000)]
    numbered = "\n".join(f"{offset + index}: {line}" for index, line in enumerate(shown))
    output = (f"<path>{path}</path>\n<type>file</type>\n<content>\n{numbered}\n\n"
              f"(End of file - total {len(lines)} lines)\n</content>")
    preview = "\n".join(shown[:20])
    return output, _relative(path), {"preview": preview, "truncated": False, "loaded": [],
                                     "display": {"type": "file", "path": path, "text": preview, "lineStart": offset,
                                                 "lineEnd": offset + len(shown) - 1, "totalLines": len(lines),
                                                 "truncated": False}}


def _edit(arguments: dict, cwd: str):
    path, old, new = arguments.get("filePath"), arguments.get("oldString"), arguments.get("newString")
    if not all(isinstance(value, str) for value in (path, old, new)):
        raise ToolError("The edit tool was called with invalid arguments: filePath, oldString and newString must be strings.")
    if old == new:
        raise ToolError("No changes to apply: oldString and newString are identical.")
    path = _absolute(path, cwd)
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    except OSError:
        raise ToolError(f"File {path} not found") from None
    count = content.count(old)
    if count == 0:
        raise ToolError("oldString not found in content")
    if count > 1 and not arguments.get("replaceAll"):
        raise ToolError("Found multiple matches for oldString. Provide more surrounding lines in oldString to "
                        "identify the correct match.")
    changed = content.replace(old, new)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(changed)
    patch, additions, deletions = _patch(path, content, changed)
    return "Edit applied successfully.", _relative(path), {
        "diagnostics": {}, "diff": patch, "filediff": {"file": path, "patch": patch, "additions": additions,
                                                      "deletions": deletions}, "truncated": False}


def _patch(path: str, before: str, after: str) -> tuple[str, int, int]:
    """The patch OpenCode's edit reports (jsdiff's ``createTwoFilesPatch``: 3 lines of context)."""
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    lines = [f"Index: {path}\n", "=" * 67 + "\n", f"--- {path}\n", f"+++ {path}\n"]
    additions = deletions = 0
    for group in difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_grouped_opcodes(3):
        first, last = group[0], group[-1]
        old_start, old_end, new_start, new_end = first[1], last[2], first[3], last[4]
        lines.append(f"@@ -{old_start + 1 if old_end > old_start else old_start},{old_end - old_start} "
                     f"+{new_start + 1 if new_end > new_start else new_start},{new_end - new_start} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in old_lines[i1:i2]]
                continue
            lines += ["-" + line for line in old_lines[i1:i2]]
            lines += ["+" + line for line in new_lines[j1:j2]]
            deletions += i2 - i1
            additions += j2 - j1
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines), \
        additions, deletions


def _todowrite(arguments: dict, cwd: str):
    todos = arguments.get("todos")
    if not isinstance(todos, list):
        raise ToolError("The todowrite tool was called with invalid arguments: todos must be a list.")
    kept = [{key: todo.get(key) for key in ("content", "status", "priority")} for todo in todos if isinstance(todo, dict)]
    open_todos = sum(1 for todo in kept if todo["status"] != "completed")
    return json.dumps(kept, indent=2), f"{open_todos} todos", {"todos": kept, "truncated": False}


def _ripgrep_missing(arguments: dict, cwd: str):
    raise ToolError("ripgrep execution failed")


def unavailable(arguments: dict, cwd: str):
    raise ToolError("Tool execution failed")


TOOLS = {"bash": _bash, "write": _write, "read": _read, "edit": _edit, "todowrite": _todowrite,
         "glob": _ripgrep_missing, "grep": _ripgrep_missing}
