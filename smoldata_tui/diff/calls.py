"""One side of a diff: an episode's tool calls, read by the trace engine in its one pass.

The calls are taken, through the engine's ``on_event`` hook, from the same parse that gives the
verdict (:class:`~smoldata_tui.trace.analysis.TraceAnalysis`), so a line is read once and read the
way the timeline and ``check`` read it. ``diff --json`` needs only the verdict from the engine and
asks for ``verdict_only``, which skips the per-event findings and stats; the screen's header shows
tokens, duration and status too, and reads in full. Lines that hold no usable event (not JSON, cut short, not an
object, a ``tool_use`` without a part) are listed as skipped, with the engine's reason; the calls
on every other line are still compared.

Each call keeps fingerprints of its normalised input and output (see ``normalize``), not the
values, and where its line is, so the detail can be read back on demand: memory stays linear in
the number of calls, whatever the outputs weigh.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from smoldata_tui.diff.normalize import fingerprint
from smoldata_tui.store.metadata import EpisodeMetadata, is_trace_name, metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.trace.analysis import CHUNK_SIZE, TraceAnalysis, TraceReport, analyze_bytes
from smoldata_tui.trace.export_doc import sniff_export
from smoldata_tui.trace.summary import input_digest, parse_line

TRACE_IN_FOLDER = "run.jsonl"  # what `smoldata-tui run` saves in an episode folder
DIGEST_LIMIT = 160  # characters of a call's one-line summary kept per call
# Findings that mean a line gave no event the diff could use.
_SKIPPING_KINDS = frozenset({"malformed_line", "truncated_line", "not_an_object", "bad_part", "wrapper_crash"})


class DiffInputError(Exception):
    """A path the diff cannot use (missing, a folder without a trace, unreadable): one line."""


@dataclass(slots=True)  # not frozen: a frozen dataclass is several times slower to make, per call
class Call:
    """One ``tool_use`` event, reduced to what the alignment and the screen need."""

    line: int  # 1-based physical line of the tool_use event
    piece: int  # >0 when the wrapper's line breaks cut the physical line into several events
    offset: int  # byte offset of the physical line, to read it back for the detail
    length: int
    tool: str
    status: str  # completed / error / running … or "(no state)"
    input_print: bytes  # fingerprint of the tool and its normalised input: the alignment's key
    output_print: bytes  # fingerprint of the status, output, error text and exit code, as written
    summary: str  # the one argument that says what the call did, clipped ("" when not asked for)
    step: int = 0  # the step it was made in, counted from 1 at each step_start as the timeline counts

    def __reduce__(self):
        # Pickled by its fields (a side read in another process comes back this way): half the
        # cost of the default for a slotted dataclass, for 20,000 calls a tenth of a second.
        return (Call, (self.line, self.piece, self.offset, self.length, self.tool, self.status,
                       self.input_print, self.output_print, self.summary, self.step))  # fmt: skip


@dataclass(frozen=True, slots=True)
class SkippedLine:
    line: int
    reason: str


@dataclass
class EpisodeCalls:
    """Everything the diff knows about one episode."""

    path: Path  # the trace file
    calls: list[Call]
    report: TraceReport  # with verdict_only (see read_calls): only the verdict and the skipped lines
    metadata: EpisodeMetadata | None = None
    metadata_problems: list[str] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    export: str | None = None  # an `opencode export` document, read converted: what it is


def tool_name(part: dict) -> str:
    tool = part.get("tool")
    return tool if type(tool) is str else repr(tool)


def call_output(state: object) -> object:
    """What a call's output is for the comparison: status, output or error text, and exit code."""
    if type(state) is not dict:
        return ["(no state)", state]
    metadata = state.get("metadata")
    exit_code = metadata.get("exit") if type(metadata) is dict else None
    return [state.get("status"), state.get("output"), state.get("error"), exit_code]


def call_input(state: object) -> object:
    return state.get("input") if type(state) is dict else None


def call_status(state: object) -> str:
    if type(state) is not dict:
        return "(no state)"
    status = state.get("status")
    return status if type(status) is str else repr(status)


class _CallTaker:
    """The engine's ``on_event`` hook: keeps each tool call it parses."""

    def __init__(self, *, summaries: bool = True) -> None:
        self.calls: list[Call] = []
        self.events = 0  # lines that gave an event object
        self._summaries = summaries
        self._step = 0

    def __call__(self, value: object, line: int, offset: int, size: int, piece: int) -> None:
        if type(value) is not dict:
            return
        self.events += 1
        kind = value.get("type")
        if kind == "step_start":
            self._step += 1
            return
        if kind != "tool_use":
            return
        part = value.get("part")
        if type(part) is not dict:
            return  # reported by the engine as bad_part: skipped
        tool = tool_name(part)
        state = part.get("state")
        tool_input = call_input(state)
        self.calls.append(
            Call(
                line=line,
                piece=piece,
                offset=offset,
                length=size,
                tool=tool,
                status=call_status(state),
                input_print=fingerprint([tool, tool_input]),
                # Outputs are large: normalised only for the pairs whose raw outputs differ.
                output_print=fingerprint(call_output(state), None),
                summary=input_digest(tool, tool_input)[:DIGEST_LIMIT] if self._summaries else "",
                step=self._step,
            )
        )


class CallReader:
    """Reads calls back from their trace, by offset, for the detail and the output comparison."""

    def __init__(self, path: Path) -> None:
        self._fd: int | None = None
        # an `opencode export` document's calls are placed in its conversion, as read_calls read them
        document = sniff_export(path)
        self._converted = document.dumps() if document is not None else None
        if self._converted is not None:
            return
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except OSError:
            pass  # gone since it was read: every call reads as None

    def part(self, call: Call) -> dict | None:
        """The call's tool part as the trace holds it, or None when it cannot be read back."""
        if self._converted is not None:
            raw = self._converted[call.offset : call.offset + call.length]
        elif self._fd is None:
            return None
        else:
            try:
                raw = os.pread(self._fd, call.length, call.offset)
            except OSError:
                return None
        value = parse_line(raw, call.piece).value
        part = value.get("part") if type(value) is dict else None
        return part if type(part) is dict else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CallReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _skipped(calls: list[Call], report: TraceReport) -> list[SkippedLine]:
    call_lines = {call.line for call in calls}
    skipped = []
    for finding in report.findings:
        # A wrapper_crash about a call's state still leaves the call; one about the JSON does not.
        if finding.kind in _SKIPPING_KINDS and finding.line is not None and finding.line not in call_lines:
            skipped.append(SkippedLine(finding.line, finding.message))
    return skipped


def read_calls(trace: Path, *, verdict_only: bool = False, summaries: bool = True) -> EpisodeCalls:
    """Stream the trace through the engine; OSError propagates.

    ``verdict_only``: the report holds the verdict and the lines that give no event, not the
    findings and stats the screen's header uses (tokens, duration, status); reading is then
    bound by parsing the JSON and the calls' fingerprints. ``summaries=False``: the calls'
    one-line summaries (the screen's rows) are left empty; ``--json`` prints none.
    """
    taker = _CallTaker(summaries=summaries)
    analysis = TraceAnalysis(on_event=taker, verdict_only=verdict_only)
    document = sniff_export(trace)
    if document is not None:  # its events, converted as the viewer shows them
        analysis.feed(document.dumps())
    else:
        with open(trace, "rb", buffering=0) as handle:
            while chunk := handle.read(CHUNK_SIZE):
                analysis.feed(chunk)
    report = analysis.finish()
    if report.lines and not taker.events:
        raise DiffInputError(f"{trace}: not a trace: none of its {report.lines:,} lines is a JSON event")
    if document is not None:  # the verdict stays the wrapper's rule on the file's own bytes
        report.verdict = analyze_bytes(trace.read_bytes())[0].verdict
    problems: list[str] = []
    metadata = load_metadata(metadata_path_for(trace), problems)
    return EpisodeCalls(trace, taker.calls, report, metadata, problems, _skipped(taker.calls, report),
                        document.describe() if document is not None else None)  # fmt: skip


def resolve_trace(argument: str | os.PathLike[str]) -> Path:
    """A trace file as given, or the trace of an episode folder (its run.jsonl, or its only trace)."""
    path = Path(argument)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DiffInputError(f"{path}: no such file or directory") from None
    except OSError as exc:
        raise DiffInputError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        if (path / TRACE_IN_FOLDER).is_file():
            return path / TRACE_IN_FOLDER
        try:
            traces = sorted(entry for entry in path.iterdir() if entry.is_file() and is_trace_name(entry.name))
        except OSError as exc:
            raise DiffInputError(f"{path}: {exc.strerror or exc}") from None
        if not traces:
            raise DiffInputError(f"{path}: no trace in this folder (an episode folder holds {TRACE_IN_FOLDER})")
        if len(traces) > 1:
            names = ", ".join(trace.name for trace in traces[:3]) + (", …" if len(traces) > 3 else "")
            raise DiffInputError(f"{path}: {len(traces)} traces in this folder ({names}); name the one to compare")
        return traces[0]
    if not stat.S_ISREG(info.st_mode):
        raise DiffInputError(f"{path}: not a regular file (save the stream to a file to compare it)")
    return path


def load_episode(
    argument: str | os.PathLike[str], *, verdict_only: bool = False, summaries: bool = True
) -> EpisodeCalls:
    """Resolve and read one side; every problem with the path is a :class:`DiffInputError`."""
    trace = resolve_trace(argument)
    try:
        return read_calls(trace, verdict_only=verdict_only, summaries=summaries)
    except OSError as exc:
        raise DiffInputError(f"{trace}: cannot read: {exc.strerror or exc}") from None
