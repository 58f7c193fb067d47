"""The ``state`` of a built tool call as OpenCode 1.18.31 writes it for each status, with the
title and metadata each OpenCode tool reports when the caller gives none.
"""

from __future__ import annotations

# OpenCode's bash tool keeps at most this many characters of output in metadata.output.
_BASH_METADATA_OUTPUT_LIMIT = 30_000


def tool_state(
    tool: str,
    input: dict,  # noqa: A002
    output: str,
    status: str,
    error: str | None,
    title: str | None,
    metadata: dict | None,
    started: int,
    ended: int,
) -> dict:
    """A tool_use part's ``state`` for ``status``; ``title`` and ``metadata`` default to the tool's."""
    if status == "completed":
        if metadata is None:
            metadata = _default_metadata(tool, input, output)
        return {
            "status": "completed",
            "input": input,
            "output": output,
            "title": _default_title(tool, input) if title is None else title,
            "metadata": metadata,
            "time": {"start": started, "end": ended},
        }
    if status == "error":
        return {
            "status": "error",
            "input": input,
            "error": "Tool execution failed" if error is None else error,
            "time": {"start": started, "end": ended},
        }
    if status == "running":
        # What `opencode export` shows for a call that was still running when the agent
        # was killed: no output yet, only the partial output in metadata, no end time.
        partial = {"output": output}
        if tool == "bash":
            partial["description"] = input.get("description", "")
        return {
            "status": "running",
            "input": input,
            "title": _default_title(tool, input) if title is None else title,
            "metadata": partial if metadata is None else metadata,
            "time": {"start": started},
        }
    if status == "pending":
        return {"status": "pending", "input": input, "raw": ""}
    # Anything else is for tests of unknown statuses: keep it minimal.
    return {"status": status, "input": input}


def _default_title(tool: str, input: dict) -> str:  # noqa: A002
    if tool == "invalid":
        return "Invalid Tool"
    if tool == "bash":
        return input.get("description") or describe_command(input.get("command", ""))
    for key in ("filePath", "pattern", "path", "url"):
        value = input.get(key)
        if isinstance(value, str):
            return value
    return tool


def _default_metadata(tool: str, input: dict, output: str) -> dict:  # noqa: A002
    if tool == "bash":
        return {
            "output": bash_metadata_output(output),
            "exit": 0,
            "description": input.get("description", ""),
            "truncated": False,
        }
    if tool == "read":
        return {"preview": "\n".join(output.split("\n", 21)[1:21]), "truncated": False}
    if tool == "write":
        return {"diagnostics": {}, "filepath": input.get("filePath", ""), "exists": False}
    return {}


def bash_metadata_output(output: str) -> str:
    """What OpenCode's bash tool keeps of the output in ``metadata.output``."""
    if len(output) > _BASH_METADATA_OUTPUT_LIMIT:
        return output[:_BASH_METADATA_OUTPUT_LIMIT] + "\n\n..."
    return output


def describe_command(command: str) -> str:
    """The title OpenCode gives a bash call that has no description."""
    first_line = command.strip().split("\n", 1)[0]
    return "Run " + (first_line[:60] or "command")
