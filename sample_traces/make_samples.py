"""Regenerate the sample traces in this folder, and the table in its README.md.

    python sample_traces/make_samples.py          # rewrite every sample and the README table
    python sample_traces/make_samples.py --check  # only verify that they are up to date

Every sample is one small OpenCode 1.18.31 ``run --format json`` trace of the same little task
(find the region with the highest 2024 revenue in ``/home/user/input/sales_2024.csv``) that shows
one shape of stream. Each sample declares what the training wrapper must make of it; the script
runs the wrapper's rule (``seed_outcome``) on every file and refuses to write anything if a sample
no longer shows what it is meant to. The README's ``native_tool_calls`` column is computed here,
so it cannot go stale. Output is deterministic: running the script twice changes nothing.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Run from a checkout whether or not the package is installed.
sys.path.insert(0, str(HERE.parent))

from smoldata_tui.trace.build import ABSENT, TraceBuilder  # noqa: E402
from smoldata_tui.trace.build_json import dumps_event  # noqa: E402
from smoldata_tui.trace.seed_rule import SeedOutcome, seed_outcome  # noqa: E402

README = HERE / "README.md"
TABLE_BEGIN = "<!-- BEGIN GENERATED TABLE: edit make_samples.py, then run it -->"
TABLE_END = "<!-- END GENERATED TABLE -->"

# ---------------------------------------------------------------------------------------------
# The task the agent works on in every sample
# ---------------------------------------------------------------------------------------------

INPUT_DIR = "/home/user/input"
CSV_PATH = f"{INPUT_DIR}/sales_2024.csv"
ANSWER_PATH = "/workdir/answer.txt"

CSV_ROWS = [
    "order_id,date,region,city,product,units,unit_price",
    "1001,2024-01-04,North,Oslo,Widget,12,12.50",
    "1002,2024-01-09,West,Zürich,Doohickey,3,104.00",
    "1003,2024-02-14,South,Sevilla,Gadget,20,29.99",
    "1004,2024-03-02,East,Kraków,Gizmo,40,7.25",
    "1005,2024-03-18,West,Lyon,Gadget,15,29.99",
    "1006,2024-04-22,North,Bergen,Doohickey,2,104.00",
    "1007,2024-05-30,South,Napoli,Widget,25,12.50",
    "1008,2024-06-11,West,Porto,Doohickey,4,104.00",
]
LS_OUTPUT = (
    "total 12\n"
    "drwxr-xr-x 2 user user 4096 Jan  1 00:00 .\n"
    "drwxr-xr-x 3 user user 4096 Jan  1 00:00 ..\n"
    "-rw-r--r-- 1 user user  412 Jan  1 00:00 sales_2024.csv\n"
)
REVENUE_SCRIPT = (
    "cd /workdir && python3 - <<'EOF'\n"
    "import pandas as pd\n"
    f"df = pd.read_csv('{CSV_PATH}')\n"
    "df['revenue'] = df['units'] * df['unit_price']\n"
    "print(df.groupby('region')['revenue'].sum().sort_values(ascending=False))\n"
    "EOF"
)
REVENUE_OUTPUT = (
    "region\n"
    "West     1177.85\n"
    "South     912.30\n"
    "North     358.00\n"
    "East      290.00\n"
    "Name: revenue, dtype: float64\n"
)
FINAL_TEXT = (
    "West had the highest total revenue in 2024 (1,177.85 = units × unit_price summed over its "
    f"orders). I wrote `West` to `{ANSWER_PATH}`."
)


def numbered(lines: list[str]) -> str:
    """The ``read`` tool's output: the file with 5-digit line numbers, inside <file> tags."""
    body = "".join(f"{number:05d}| {line}\n" for number, line in enumerate(lines, start=1))
    return f"<file>\n{body}\n(End of file - total {len(lines)} lines)\n</file>"


# Small step helpers: each adds the events of one typical step, or one typical call.


def list_inputs(b: TraceBuilder, **kwargs) -> dict:
    return b.bash(f"ls -la {INPUT_DIR}", LS_OUTPUT, description="List input files", **kwargs)


def read_csv(b: TraceBuilder, **kwargs) -> dict:
    return b.tool("read", {"filePath": CSV_PATH}, numbered(CSV_ROWS), **kwargs)


def revenue_by_region(b: TraceBuilder, **kwargs) -> dict:
    kwargs.setdefault("duration_ms", 850)
    return b.bash(
        REVENUE_SCRIPT, REVENUE_OUTPUT, description="Compute revenue per region", **kwargs
    )


def write_answer(b: TraceBuilder, **kwargs) -> dict:
    answer = {"filePath": ANSWER_PATH, "content": "West\n"}
    return b.tool("write", answer, "Wrote file successfully.", **kwargs)


def step(b: TraceBuilder, *calls: Callable[[TraceBuilder], dict]) -> None:
    """One complete step that makes ``calls`` (in that order) and ends with reason tool-calls."""
    b.step_start()
    for call in calls:
        call(b)
    b.step_finish("tool-calls")


def final_step(b: TraceBuilder) -> None:
    b.step_start()
    b.text(FINAL_TEXT)
    b.step_finish("stop")


# ---------------------------------------------------------------------------------------------
# The samples
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    name: str  # file name without .jsonl
    shows: str  # one sentence for the README
    expected_calls: int | None | str  # native_tool_calls, or "crash: ExceptionName"
    # For expected None: how the wrapper's caught exception starts ("KeyError", "ValueError:
    # Unfinished tool action"), so a sample cannot drift into failing for another reason.
    expected_reason: str | None
    build: Callable[[], bytes]


SAMPLES: list[Sample] = []


def sample(
    name: str, shows: str, expected_calls: int | None | str, expected_reason: str | None = None
):
    def register(build: Callable[[], bytes]) -> Callable[[], bytes]:
        SAMPLES.append(Sample(name, shows, expected_calls, expected_reason, build))
        return build

    return register


INCOMPLETE = "ValueError: Incomplete OpenCode event stream"
MISSING_OR_REPEATED = "ValueError: Missing or repeated tool action IDs"
UNFINISHED = "ValueError: Unfinished tool action"


@sample("clean_pass", "A clean four-step run (bash, bash, write) ending in step_finish `stop`.", 3)
def clean_pass() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    step(b, revenue_by_region)
    step(b, write_answer)
    final_step(b)
    return b.dumps()


@sample(
    "missing_call_id",
    "Three calls without a usable callID: the key absent, `null`, and `\"\"`.",
    None,
    "KeyError: 'callID'",
)
def missing_call_id() -> bytes:
    b = TraceBuilder()
    step(b, lambda b: list_inputs(b, call_id=ABSENT))
    step(b, lambda b: read_csv(b, call_id=None), lambda b: revenue_by_region(b, call_id=""))
    final_step(b)
    return b.dumps()


@sample(
    "duplicate_call_id_reemitted",
    "The identical tool_use line (same part id, same content) written twice.",
    None,
    MISSING_OR_REPEATED,
)
def duplicate_call_id_reemitted() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    b.step_start()
    event = revenue_by_region(b)
    b.raw(copy.deepcopy(event))
    b.step_finish("tool-calls")
    final_step(b)
    return b.dumps()


@sample(
    "duplicate_call_id_reused",
    "Two different calls (bash `ls`, then `read`; different part ids) that share callID `call_0`, "
    "as a server numbering calls per response would send.",
    None,
    MISSING_OR_REPEATED,
)
def duplicate_call_id_reused() -> bytes:
    b = TraceBuilder()
    step(b, lambda b: list_inputs(b, call_id="call_0"))
    step(b, lambda b: read_csv(b, call_id="call_0"))
    final_step(b)
    return b.dumps()


@sample(
    "unfinished_call",
    "A killed step as `opencode export` recovers it: a `read` part with no `state` key and a bash "
    "call with `state.status` `running` (partial output in metadata only).",
    None,
    UNFINISHED,
)
def unfinished_call() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    b.step_start()
    b.text("Let me read the file and compute the totals in parallel.")
    read_csv(b, state=ABSENT)
    revenue_by_region(b, status="running", metadata={"output": "region\nWest     1177.85\n"})
    return b.dumps()


@sample(
    "tool_errors",
    "Tool failures that are not run failures: `read` with bad arguments (status `error`) and a "
    "bash python run that completed with `metadata.exit` 1; the agent recovers.",
    3,
)
def tool_errors() -> bytes:
    b = TraceBuilder()
    b.step_start()
    b.tool(
        "read",
        {"path": CSV_PATH},
        status="error",
        error=(
            "The read tool was called with invalid arguments: [\n"
            "  {\n"
            '    "expected": "string",\n'
            '    "code": "invalid_type",\n'
            '    "path": [\n'
            '      "filePath"\n'
            "    ],\n"
            '    "message": "Invalid input: expected string, received undefined"\n'
            "  }\n"
            "].\n"
            "Please rewrite the input so it satisfies the expected schema."
        ),
    )
    b.step_finish("tool-calls")
    b.step_start()
    b.bash(
        REVENUE_SCRIPT.replace("df['revenue'] = df['units'] * df['unit_price']\n", ""),
        "Traceback (most recent call last):\n"
        '  File "<stdin>", line 3, in <module>\n'
        "KeyError: 'revenue'\n",
        exit_code=1,
        description="Compute revenue per region",
        duration_ms=640,
    )
    b.step_finish("tool-calls")
    step(b, revenue_by_region)
    final_step(b)
    return b.dumps()


@sample(
    "invalid_tool",
    "The model called a tool that does not exist (`python`); OpenCode records it as tool "
    "`invalid`, status `completed`, title `Invalid Tool`.",
    2,
)
def invalid_tool() -> bytes:
    b = TraceBuilder()
    b.step_start()
    b.invalid(
        "python",
        "Model tried to call unavailable tool 'python'. Available tools: bash, edit, glob, grep, "
        "list, read, todoread, todowrite, write.",
    )
    b.step_finish("tool-calls")
    step(b, revenue_by_region)
    final_step(b)
    return b.dumps()


@sample(
    "no_step_finish",
    "Killed during the first step: step_start, text, tool_use, and no step_finish at all.",
    None,
    INCOMPLETE,
)
def no_step_finish() -> bytes:
    b = TraceBuilder()
    b.step_start()
    b.text("I'll start by looking at the input files.")
    list_inputs(b)
    return b.dumps()


@sample(
    "killed_mid_step",
    "Two finished steps, then a last step with step_start + tool_use and no step_finish (killed). "
    "The wrapper still counts every call.",
    3,
)
def killed_mid_step() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    step(b, revenue_by_region)
    b.step_start()
    write_answer(b)
    return b.dumps()


@sample(
    "unmatched_steps",
    "The last step's step_start line is missing, so its text and its step_finish (`stop`) carry a "
    "messageID that no step_start opened.",
    2,
)
def unmatched_steps() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    step(b, revenue_by_region)
    # No step_start: the builder gives the following parts a message id of their own.
    b.text(FINAL_TEXT)
    b.step_finish("stop")
    return b.dumps()


@sample(
    "provider_error",
    "A step_start, then an `error` event (APIError, `Bad Request: model not found`); "
    "rc would be 1.",
    None,
    INCOMPLETE,
)
def provider_error() -> bytes:
    b = TraceBuilder()
    b.step_start()
    b.error("APIError", "Bad Request: model not found", statusCode=400, isRetryable=False)
    return b.dumps()


@sample(
    "provider_error_after_steps",
    "One finished step, then a context-length `error` in the second step. Because some "
    "step_finish exists, the wrapper counts the calls even though the run failed.",
    1,
)
def provider_error_after_steps() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    b.step_start()
    b.error(
        "APIError",
        "This model's maximum context length is 32768 tokens. However, you requested 33012 tokens "
        "(28916 in the messages, 4096 in the completion). Please reduce the length of the "
        "messages or completion.",
        statusCode=400,
        isRetryable=False,
    )
    return b.dumps()


@sample(
    "malformed_line",
    "A stray `npm warn deprecated …` log line (stderr mixed into the stream) between events.",
    None,
    "JSONDecodeError",
)
def malformed_line() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    stray = (
        b"npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory. "
        b"Do not use it.\n"
    )
    head = b.drain()
    step(b, revenue_by_region)
    final_step(b)
    return head + stray + b.dumps()


@sample(
    "truncated_last_line",
    "Two finished steps, then the last line (a write call) cut mid-JSON with no trailing newline.",
    None,
    "JSONDecodeError",
)
def truncated_last_line() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    step(b, revenue_by_region)
    b.step_start()
    complete = b.dumps()
    last_line = dumps_event(write_answer(b))
    return complete + last_line[: len(last_line) // 2]


@sample(
    "line_separator_in_output",
    "A `read` output holding a raw U+2028 (a CSV note pasted from a web page). JSON allows it and "
    "OpenCode does not escape it, but the wrapper's `str.splitlines()` splits the line there.",
    None,
    "JSONDecodeError",
)
def line_separator_in_output() -> bytes:
    rows = [CSV_ROWS[0] + ",note"] + [row + "," for row in CSV_ROWS[1:]]
    rows[4] += '"bulk order\u2028call before delivery"'
    b = TraceBuilder()
    step(b, lambda b: b.tool("read", {"filePath": CSV_PATH}, numbered(rows)))
    step(b, revenue_by_region)
    final_step(b)
    return b.dumps()


@sample(
    "undecodable_bytes",
    "Invalid UTF-8 (`ff fe`, a UTF-16 byte-order mark) inside a bash output. OpenCode itself "
    "always writes valid UTF-8, so this is a log damaged or re-encoded on the way.",
    None,
    "UnicodeDecodeError",
)
def undecodable_bytes() -> bytes:
    marker = "@@UTF16_BOM@@"
    b = TraceBuilder()
    b.step_start()
    b.bash(f"head -c 40 {INPUT_DIR}/sales_2024.csv", f"{marker}order_id,date,region,city\n")
    b.step_finish("tool-calls")
    step(b, revenue_by_region)
    final_step(b)
    data = b.dumps()
    assert data.count(marker.encode()) == 2  # output and metadata.output
    return data.replace(marker.encode(), b"\xff\xfe")


@sample(
    "unknown_event_type",
    "A clean run followed by `{\"type\":\"done\",\"reason\":\"idle\",\"rejected\":[]}`, the "
    "end-of-run line of a newer OpenCode.",
    1,
)
def unknown_event_type() -> bytes:
    b = TraceBuilder()
    step(b, revenue_by_region)
    final_step(b)
    b.raw({"type": "done", "reason": "idle", "rejected": []})
    return b.dumps()


@sample(
    "multiple_sessions",
    "Two sessions appended to one file (two sessionIDs, one run an hour after the other).",
    2,
)
def multiple_sessions() -> bytes:
    first = TraceBuilder()
    step(first, list_inputs)
    final_step(first)
    second = TraceBuilder(session_id="ses_488ee697fffeHc4WbN8sLq2Ztv", start_ms=1767229200000)
    step(second, revenue_by_region)
    final_step(second)
    return first.dumps() + second.dumps()


@sample(
    "timestamps_backwards",
    "The bash python call's line has a timestamp 90 s lower than the line before it (a clock "
    "step); everything else is clean.",
    2,
)
def timestamps_backwards() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    b.step_start()
    event = revenue_by_region(b)
    event["timestamp"] -= 90_000
    b.step_finish("tool-calls")
    final_step(b)
    return b.dumps()


@sample(
    "empty", "Zero bytes: killed before the first event, or still retrying a 5xx.", None, INCOMPLETE
)
def empty() -> bytes:
    return b""


@sample(
    "wrapper_crash_state_null",
    "A tool part with `\"state\": null`. The wrapper's `part.get(\"state\", {})` returns None and "
    "`.get` on it raises AttributeError, which its `except` does not catch.",
    "crash: AttributeError",
)
def wrapper_crash_state_null() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    step(b, lambda b: revenue_by_region(b, state=None))
    final_step(b)
    return b.dumps()


@sample(
    "wrapper_crash_non_object",
    "A line that is valid JSON but not an object (`42`): `event.get` raises AttributeError.",
    "crash: AttributeError",
)
def wrapper_crash_non_object() -> bytes:
    b = TraceBuilder()
    step(b, list_inputs)
    head = b.drain()
    final_step(b)
    return head + b"42\n" + b.dumps()


# Deep enough to exceed the recursion limit of json.loads on any CPython we know of.
NESTING_DEPTH = 50_000


@sample(
    "wrapper_crash_deep_nesting",
    f"A `read` call whose arguments nest a list {NESTING_DEPTH:,} levels deep (status `error`, "
    "OpenCode keeps the bad input). Valid JSON, but `json.loads` raises RecursionError, which the "
    "wrapper does not catch.",
    "crash: RecursionError",
)
def wrapper_crash_deep_nesting() -> bytes:
    marker = "@@NESTED@@"
    b = TraceBuilder()
    b.step_start()
    b.tool(
        "read",
        {"filePath": marker},
        status="error",
        error="The read tool was called with invalid arguments: expected string, received array.",
    )
    b.step_finish("tool-calls")
    final_step(b)
    nested = b"[" * NESTING_DEPTH + b"]" * NESTING_DEPTH
    return b.dumps().replace(f'"{marker}"'.encode(), nested)


# ---------------------------------------------------------------------------------------------
# Checking, README table, main
# ---------------------------------------------------------------------------------------------


def verdict(outcome: SeedOutcome) -> int | None | str:
    if outcome.crash is not None:
        return f"crash: {type(outcome.crash).__name__}"
    return outcome.calls


def reason(outcome: SeedOutcome) -> str:
    """The wrapper's exception as ``Name: message`` (empty when it counted the calls)."""
    exc = outcome.crash or outcome.caught
    if exc is None:
        return ""
    message = str(exc)
    if len(message) > 90:
        message = message[:87] + "..."
    return f"{type(exc).__name__}: {message}"


def problems_with(sample: Sample, data: bytes) -> list[str]:
    outcome = seed_outcome(data)
    calls, why = verdict(outcome), reason(outcome)
    found: list[str] = []
    if calls != sample.expected_calls:
        found.append(f"native_tool_calls is {calls!r}, expected {sample.expected_calls!r}")
    if sample.expected_reason and not why.startswith(sample.expected_reason):
        found.append(f"wrapper reason is {why!r}, expected {sample.expected_reason!r}...")
    return found


def markdown_cell(text: str) -> str:
    # GitHub tables split on "|" even inside code spans, unless it is written "\|".
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(built: dict[str, bytes]) -> str:
    lines = [
        "| file | what it shows | `native_tool_calls` | the wrapper's exception |",
        "|---|---|---|---|",
    ]
    for sample in SAMPLES:
        outcome = seed_outcome(built[sample.name])
        why = reason(outcome)
        lines.append(
            f"| [`{sample.name}.jsonl`]({sample.name}.jsonl) | {markdown_cell(sample.shows)} "
            f"| `{verdict(outcome)}` | {f'`{markdown_cell(why)}`' if why else ''} |"
        )
    return "\n".join(lines)


README_TEMPLATE = f"""# Sample traces

Small traces in the exact format of `opencode run --format json` (OpenCode 1.18.31, see
[`docs/trace-format.md`](../docs/trace-format.md)), all of one little task: find the region with the
highest 2024 revenue in `/home/user/input/sales_2024.csv` and write it to `/workdir/answer.txt`.
Each file shows one shape of stream, healthy or broken, for tests, demos and the TUI.

They are generated, deterministically, from `smoldata_tui.trace.build.TraceBuilder`:

```
python sample_traces/make_samples.py          # regenerate the files and the table below
python sample_traces/make_samples.py --check  # verify that they are up to date
```

`native_tool_calls` is what the training wrapper (`TaskSession.fetch_training_trace` in the
SmolDataEnvs environment) computes for the file, obtained by running its rule
(`smoldata_tui.trace.seed_rule.seed_outcome`) on the bytes: an int, `None` (the wrapper caught an
exception and training gets no count), or `crash: Name` (exception `Name` escapes the wrapper and
training crashes). The script fails if a sample stops showing what it is meant to.

{TABLE_BEGIN}
{TABLE_END}
"""


def render_readme(current: str | None, table: str) -> str:
    has_markers = current is not None and TABLE_BEGIN in current and TABLE_END in current
    text = current if has_markers else README_TEMPLATE
    before, rest = text.split(TABLE_BEGIN, 1)
    _, after = rest.split(TABLE_END, 1)
    return f"{before}{TABLE_BEGIN}\n{table}\n{TABLE_END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    args = parser.parse_args(argv)

    built = {sample.name: sample.build() for sample in SAMPLES}
    failures = [
        f"{sample.name}.jsonl: {problem}"
        for sample in SAMPLES
        for problem in problems_with(sample, built[sample.name])
    ]
    if failures:
        print("samples no longer show what they are meant to:", *failures, sep="\n  ",
              file=sys.stderr)
        return 1

    current_readme = README.read_text(encoding="utf-8") if README.exists() else None
    wanted = {HERE / f"{name}.jsonl": data for name, data in built.items()}
    wanted[README] = render_readme(current_readme, render_table(built)).encode()

    if args.check:
        stale = [
            path.name
            for path, data in wanted.items()
            if not path.exists() or path.read_bytes() != data
        ]
        if stale:
            print("out of date (run make_samples.py):", *stale, sep="\n  ", file=sys.stderr)
            return 1
        print(f"{len(SAMPLES)} samples up to date")
        return 0

    for path, data in wanted.items():
        path.write_bytes(data)
    unknown = sorted({p.name for p in HERE.glob("*.jsonl")} - {p.name for p in wanted})
    if unknown:
        print("note: not made by this script:", *unknown, sep="\n  ", file=sys.stderr)
    print(f"wrote {len(SAMPLES)} samples and README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
