"""``smoldata-tui opencode compare OLD NEW [RECORDING…]``: does an OpenCode upgrade change what
training sees?

Each recording is replayed (the replay model, capture on) through both versions, each installed
as ``opencode install`` does; per recording the outcome on both sides (verdict, grade, exit), the
shape changes of the trace (:mod:`trace_shape`: event types, key paths, step order, tools
offered, and whether the tool definitions and messages the model was sent changed) and the
replay's divergences. Every episode is a real ``smoldata-tui run --headless``
in its own process, so it runs exactly as a user's would; a version's episodes run in parallel
(``--jobs``, default the CPU count).

Prints a table, or with ``--json`` one JSON object as the last line. Exit 0 when nothing
differs, 1 when something does (or an episode could not run), 2 for usage errors.
No Textual.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from smoldata_tui.store.metadata import metadata_path_for
from smoldata_tui.store.metadata_reader import load_metadata
from smoldata_tui.opencode.install import OpenCodeInstallError, _checked_version, ensure_opencode
from smoldata_tui.training.trace_shape import TraceShape, read_shape, shape_changes
from smoldata_tui.trace.text import clip

EXIT_SAME, EXIT_DIFFERENT, EXIT_USAGE = 0, 1, 2
SAMPLE_RECORDINGS = Path(__file__).resolve().parents[2] / "sample_traces" / "real"
DEFAULT_TIMEOUT_S = 300.0
MAX_SUMMARY_BYTES = 1 << 20  # the headless final line; an episode's event lines come before it


class CompareUsageError(Exception):
    """A recording or option that cannot be used: exit 2 with this message."""


@dataclass
class Recording:
    path: Path  # the trace replayed
    task: str
    label: str  # as the user named it (a trace or an episode folder)


@dataclass
class Outcome:
    verdict: str | None = None
    grade: float | None = None
    exit: int | None = None
    divergences: int = 0
    trace: str | None = None
    error: str | None = None
    shape: TraceShape = field(default_factory=TraceShape)

    def facts(self) -> dict:
        return {"verdict": self.verdict, "grade": self.grade, "exit": self.exit}


def default_recordings() -> list[Path]:
    """The shipped real recordings of the built-in harness that ended on their own: each replays
    in seconds. The killed and wall-clock-limited ones end on a limit, not on OpenCode's answer;
    the export-document sample repeats ``passing_run``; opencode_env's run is another harness."""
    found = []
    for trace in sorted(SAMPLE_RECORDINGS.glob("*.jsonl")):
        if trace.name.endswith((".proxy.jsonl", ".requests.jsonl")) or trace.with_suffix(".export.json").exists():
            continue
        metadata = load_metadata(metadata_path_for(trace))
        if metadata is not None and metadata.harness == "builtin" and metadata.status == "finished":
            found.append(trace)
    return found


def recordings_from(arguments: list[str], task: str | None) -> list[Recording]:
    from smoldata_tui.diff.calls import DiffInputError, resolve_trace

    named: list[tuple[str, Path]] = []
    for argument in arguments:
        try:
            named.append((argument, resolve_trace(argument)))
        except DiffInputError as exc:
            raise CompareUsageError(str(exc)) from None
    if not arguments:
        named = [(str(path), path) for path in default_recordings()]
        if not named:
            raise CompareUsageError(f"no shipped recordings in {SAMPLE_RECORDINGS}: name the recordings to replay")
    recordings = []
    for label, path in named:
        metadata = load_metadata(metadata_path_for(path))
        name = task or (metadata.task if metadata is not None else None)
        if not name:
            raise CompareUsageError(f"{path}: its metadata names no task; pass --task")
        recordings.append(Recording(path, name, label))
    return recordings


def _last_json_line(path: Path) -> dict | None:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - MAX_SUMMARY_BYTES))
        lines = [line for line in handle.read().splitlines() if line.strip()]
    try:
        found = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def replay_once(recording: Recording, version: str, save: Path, *, tasks: str | None, timeout_s: float) -> Outcome:
    """One real headless replay of ``recording`` on OpenCode ``version``, saved under ``save``."""
    command = [sys.executable, "-m", "smoldata_tui", "run", "--headless", "--task", recording.task,
               "--model", f"replay:{recording.path}", "--opencode-version", version, "--save", str(save),
               "--timeout", str(timeout_s)] + (["--tasks", tasks] if tasks else [])  # fmt: skip
    save.mkdir(parents=True, exist_ok=True)
    out_path, err_path = save / ".stdout", save / ".stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout_s + 120)
        except subprocess.TimeoutExpired:
            return Outcome(error=f"the replay did not end within {timeout_s + 120:.0f} s")
    summary = _last_json_line(out_path)
    if summary is None or "status" not in summary:
        with open(err_path, "rb") as handle:
            tail = handle.read()[-2000:].decode(errors="replace").strip().splitlines()
        return Outcome(error=clip(tail[-1] if tail else f"the replay exited {done.returncode} and said nothing", 300))
    grade = summary.get("grade") or {}
    outcome = Outcome(verdict=summary.get("verdict"), grade=grade.get("env_reward"), exit=summary.get("exit_code"),
                      divergences=len(summary.get("divergences") or []), trace=summary.get("trace"),
                      error=summary.get("error"))  # fmt: skip
    if outcome.trace:
        outcome.shape = read_shape(outcome.trace)
    return outcome


def compare_recording(recording: Recording, old: Outcome, new: Outcome) -> dict:
    changes = shape_changes(old.shape, new.shape)
    row = {"recording": recording.label, "old": old.facts(), "new": new.facts(), **changes,
           "divergences": new.divergences, "old_divergences": old.divergences,
           "tools_offered": {"old": old.shape.tools_offered, "new": new.shape.tools_offered},
           "traces": {"old": old.trace, "new": new.trace}}  # fmt: skip
    errors = [f"{side}: {outcome.error}" for side, outcome in (("old", old), ("new", new)) if outcome.error]
    errors += [f"{side}: no run.requests.jsonl: the tools offered are unknown"
               for side, outcome in (("old", old), ("new", new)) if outcome.trace and not outcome.shape.requests_read]  # fmt: skip
    if errors:
        row["errors"] = errors
    return row


def row_differs(row: dict) -> bool:
    lists = ("events_added", "events_removed", "fields_added", "fields_removed", "tools_offered_added",
             "tools_offered_removed", "order_changes", "tool_schemas_changed", "prompts_changed")  # fmt: skip
    return (row["old"] != row["new"] or any(row[name] for name in lists) or bool(row.get("errors"))
            or row["divergences"] != row["old_divergences"])  # fmt: skip


def compare_versions(old: str, new: str, recordings: list[Recording], *, save: Path, tasks: str | None = None,
                     jobs: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, say=lambda line: None) -> dict:  # fmt: skip
    """Replay every recording on ``old`` then on ``new`` (each version's episodes ``jobs`` at a
    time) and compare them; the result is what ``--json`` prints."""
    for version in dict.fromkeys((old, new)):
        ensure_opencode(version, progress=say)
    workers = max(1, min(jobs or os.cpu_count() or 1, len(recordings)))
    outcomes: dict[str, list[Outcome]] = {}
    for side, version in (("old", old), ("new", new)):

        def run(numbered: tuple[int, Recording], side=side, version=version) -> Outcome:
            number, recording = numbered
            started = time.monotonic()
            outcome = replay_once(recording, version, save / side / f"{number:02d}-{recording.path.stem}",
                                  tasks=tasks, timeout_s=timeout_s)  # fmt: skip
            said = outcome.error or f"{outcome.verdict}, grade {outcome.grade}, exit {outcome.exit}"
            say(f"[{version}] {recording.path.name}: {clip(said, 200)} ({time.monotonic() - started:.1f} s)")
            return outcome

        say(f"replaying {len(recordings)} recording(s) on OpenCode {version}, {workers} at a time…")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes[side] = list(pool.map(run, enumerate(recordings, 1)))
    rows = [compare_recording(recording, a, b) for recording, a, b in zip(recordings, outcomes["old"], outcomes["new"])]
    return {"old": old, "new": new, "recordings": rows}


def _side(facts: dict) -> str:
    grade = "-" if facts["grade"] is None else f"{facts['grade']:g}"
    return clip(f"{facts['verdict'] or '-'}, grade {grade}, exit {facts['exit']}", 40)


def print_table(result: dict, out: TextIO) -> None:
    old, new = result["old"], result["new"]
    out.write(f"{'recording':<22}  {'OpenCode ' + old:<40}  {'OpenCode ' + new:<40}  divergences\n")
    for row in result["recordings"]:
        name = clip(Path(row["recording"]).name, 22)
        out.write(f"{name:<22}  {_side(row['old']):<40}  {_side(row['new']):<40}  "
                  f"{row['old_divergences']} → {row['divergences']}\n")  # fmt: skip
        for label, key in (("events added", "events_added"), ("events removed", "events_removed"),
                           ("fields added", "fields_added"), ("fields removed", "fields_removed"),
                           ("tools offered added", "tools_offered_added"),
                           ("tools offered removed", "tools_offered_removed"), ("order", "order_changes"),
                           ("tool definitions changed", "tool_schemas_changed"),
                           ("messages sent changed", "prompts_changed"),
                           ("not compared", "errors")):  # fmt: skip
            if row.get(key):
                out.write(clip(f"    {label}: {', '.join(row[key])}", 400) + "\n")
        offered = row["tools_offered"]["new"] or row["tools_offered"]["old"]
        if offered and not row["tools_offered_added"] and not row["tools_offered_removed"]:
            out.write(clip(f"    tools offered (both): {', '.join(offered)}", 400) + "\n")
    differing = sum(1 for row in result["recordings"] if row_differs(row))
    out.write(f"{differing} of {len(result['recordings'])} recording(s) differ between {old} and {new}\n")


def run_compare_cli(args, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr

    def say(line: str) -> None:
        print(line, file=err, flush=True)

    try:
        old, new = _checked_version(args.old), _checked_version(args.new)
        if not (args.timeout > 0):
            raise CompareUsageError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
        if args.jobs is not None and args.jobs < 1:
            raise CompareUsageError(f"--jobs must be a positive whole number, not {args.jobs}")
        recordings = recordings_from(args.recordings, args.task)
    except (OpenCodeInstallError, CompareUsageError) as exc:
        print(f"smoldata-tui opencode compare: {exc}", file=err)
        return EXIT_USAGE
    keep = args.save is not None
    save = Path(args.save) if keep else Path(tempfile.mkdtemp(prefix="smoldata-opencode-compare-"))
    try:
        result = compare_versions(old, new, recordings, save=save, tasks=args.tasks, jobs=args.jobs or 0,
                                  timeout_s=args.timeout, say=say)  # fmt: skip
    except OpenCodeInstallError as exc:
        print(f"smoldata-tui opencode compare: {exc}", file=err)
        return EXIT_DIFFERENT
    finally:
        if not keep:
            shutil.rmtree(save, ignore_errors=True)
    if not keep:
        for row in result["recordings"]:
            row.pop("traces", None)  # removed with the temporary folder
    if args.json:
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        print_table(result, out)
    out.flush()
    return EXIT_DIFFERENT if any(row_differs(row) for row in result["recordings"]) else EXIT_SAME
