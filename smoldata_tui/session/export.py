"""After the agent ends: ``opencode export`` recovers the calls a kill cut short.

On SIGTERM/SIGKILL OpenCode flushes nothing, so a call that was running never reaches the
JSON stream. Its session in OpenCode's database still holds the tool part with
``state.status: "running"`` (input and partial output), and ``opencode export <sessionID>``
prints it. Those calls are what "unfinished" means for a killed episode.
"""

from __future__ import annotations

import json
from collections.abc import Callable
import shlex
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from smoldata_tui.sandbox.protocol import exec_repeatable
from smoldata_tui.trace.text import neutralize

SETTLED = ("completed", "error")
MAX_EXPORT_BYTES = 16 << 20  # the agent controls how big its session is: more is not read
MAX_RECOVERED = 50  # unfinished calls kept; an agent leaves one or a few running
MAX_INPUT_CHARS = 16_000  # of one call's input: with its output, 50 calls stay far under run.meta.json's 4 MB


class ExportTooLarge(Exception):
    def __init__(self, limit: int, seen: int | None) -> None:
        super().__init__(f"opencode export printed {seen if seen is not None else 'more than ' + str(limit)} bytes, "
                         f"over the {limit}-byte cap")  # fmt: skip
        self.limit, self.seen = limit, seen


@dataclass(frozen=True)
class RecoveredCall:
    call_id: str | None
    tool: str | None
    status: str | None
    input: object
    partial_output: str

    def to_json(self) -> dict:
        return {
            "callID": self.call_id,
            "tool": self.tool,
            "status": self.status,
            "input": self.input,
            "partial_output": self.partial_output,
            "source": "opencode export",
        }


def first_session_id(trace_path: Path, lines: int = 50) -> str | None:
    """The sessionID of the first event that has one (reads only the first lines)."""
    with open(trace_path, "rb") as trace:
        for line in islice(trace, lines):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and isinstance(event.get("sessionID"), str):
                return event["sessionID"]
    return None


def export_session(sandbox: object, opencode: str, session_id: str, env: dict[str, str],
                   scrub: Callable[[str], str] = str, max_bytes: int = MAX_EXPORT_BYTES,
                   report: Callable[[str], None] = lambda _message: None) -> dict | None:  # fmt: skip
    """``opencode export <sessionID>`` run in the sandbox (its text passed through ``scrub``, which
    masks secrets the agent printed); None when it fails, with the reason given to ``report``. At
    most ``max_bytes`` of it cross to the host: a larger export raises :class:`ExportTooLarge` with
    the size seen.

    The export only reads OpenCode's database, so a remote sandbox may repeat it after a dropped
    connection (``exec_repeatable``). Apart from ExportTooLarge it never raises: the episode is
    graded whatever happens here."""
    command = (
        f'f=$(mktemp) && {shlex.quote(opencode)} export {shlex.quote(session_id)} > "$f"; code=$?; '
        f'echo "export-size=$(stat -c %s "$f")" >&2; head -c {max_bytes + 1} "$f"; rm -f "$f"; exit $code'
    )
    try:
        result = exec_repeatable(sandbox, command, envs=env, timeout=60)
    except Exception as exc:  # noqa: BLE001 - recovery is best effort; grading goes on
        report(scrub(f"{type(exc).__name__}: {exc}"))
        return None
    if len(result.stdout.encode("utf-8", "surrogateescape")) > max_bytes:
        lines = (result.stderr or "").splitlines() + result.stdout[:200].splitlines()  # some backends merge the two
        sizes = [line[len("export-size="):] for line in lines if line.startswith("export-size=")]
        raise ExportTooLarge(max_bytes, int(sizes[-1]) if sizes and sizes[-1].isdigit() else None)
    if result.exit_code != 0:
        report(scrub(f"exit {result.exit_code}: {(result.stderr or result.stdout).strip()[:300]}"))
        return None
    text = scrub(result.stdout)
    start = text.find("{")  # OpenCode may print a notice before the JSON
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _short(value: object) -> str | None:
    return value[:200] if isinstance(value, str) else None


def _bounded_input(value: object) -> object:
    """A call's input as saved in run.meta.json: whole when small, else a clipped JSON text (the
    agent writes it, and the metadata file must stay readable)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_INPUT_CHARS:
        return value
    return f"{text[:MAX_INPUT_CHARS]}… ({len(text)} characters of JSON, clipped)"


def unfinished_calls(export: dict) -> list[RecoveredCall]:
    """Tool parts of the export whose status is not completed/error (the first MAX_RECOVERED)."""
    found = []
    for message in export.get("messages") or []:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if not isinstance(part, dict) or part.get("type") != "tool":
                continue
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            if state.get("status") in SETTLED:
                continue
            if len(found) == MAX_RECOVERED:
                return found
            metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
            output = metadata.get("output") or state.get("output") or ""
            found.append(
                RecoveredCall(
                    call_id=_short(part.get("callID")),
                    tool=_short(part.get("tool")),
                    status=_short(state.get("status")),
                    input=_bounded_input(state.get("input")),
                    partial_output=neutralize(str(output)[:4000]),
                )
            )
    return found
