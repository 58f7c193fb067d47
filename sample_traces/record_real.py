"""Record sample episodes with the real OpenCode 1.18.31 in a bubblewrap sandbox.

    python sample_traces/record_real.py                 # rewrites sample_traces/real/
    python sample_traces/record_real.py timeout ...     # only these scenarios (the README lists all)

Each scenario is a scripted model (a recording built with TraceBuilder) served by the replay
model to the real OpenCode, which runs the calls for real on a sample task; the real grader
scores the answer. What lands in ``real/`` is OpenCode's own output: its ids, its timestamps,
its tool outputs, its way of ending a killed run. Needs bubblewrap and npm (OpenCode is
installed on first use). The ``opencode_env_run`` scenario runs through ``--harness
opencode-env`` and also saves opencode_env's proxy trace; where opencode_env is not importable
its files are kept as they are. opencode_env is not on PyPI: put a checkout of OpenEnv's
``envs/opencode_env`` on PYTHONPATH as a package named ``opencode_env``, outside this repository,
and set ``OPENCODE_ENV_COMMIT`` to the OpenEnv commit it comes from; it must be
:data:`OPENCODE_ENV_COMMIT` below, which the README names (update both together).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from smoldata_tui.session.episode import Episode, EpisodeSpec  # noqa: E402
from smoldata_tui.replay.model_endpoint import open_endpoint  # noqa: E402
from smoldata_tui.tasks import default_task_root, load_task  # noqa: E402
from smoldata_tui.trace import analyze_path  # noqa: E402
from smoldata_tui.trace.build import TraceBuilder  # noqa: E402

OUT = HERE / "real"
OPENCODE_ENV_REPO = "huggingface/OpenEnv"
OPENCODE_ENV_COMMIT = "385de5ebb8d08d51d000d7dfc19de5f3c6a9c215"  # envs/opencode_env last changed in 4026f15f
CSV = "/home/user/input/sales.csv"
REVENUE = (
    "import csv, collections\n"
    f"rows = list(csv.DictReader(open('{CSV}')))\n"
    "total = collections.Counter()\n"
    "for r in rows:\n"
    "    if r['order_date'].startswith('2024'):\n"
    "        total[r['region']] += int(r['units']) * float(r['unit_price'])\n"
    "print(total.most_common(1)[0][0])\n"
)


def _passing(b: TraceBuilder) -> None:
    b.step_start()
    b.text("Let me look at the data.")
    b.bash(f"head -3 {CSV}", "")
    b.step_finish("tool-calls")
    b.step_start()
    b.bash(f"python3 - <<'EOF'\n{REVENUE}EOF", "")
    b.step_finish("tool-calls")
    b.step_start()
    b.tool("write", {"filePath": "/workdir/answer.txt", "content": "West"}, "Wrote file successfully.")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("West has the highest 2024 revenue; the answer is in /workdir/answer.txt.")
    b.step_finish("stop")


def _failing(b: TraceBuilder) -> None:
    b.step_start()
    b.text("The first region listed is probably the answer.")
    b.tool("write", {"filePath": "/workdir/answer.txt", "content": "North"}, "Wrote file successfully.")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("Done: North.")
    b.step_finish("stop")


def _tool_errors(b: TraceBuilder) -> None:
    b.step_start()
    b.tool("read", {"filePath": "/home/user/input/sales_2024.csv"}, status="error", error="File not found")
    b.bash("python3 -c 'import pandas'", "")
    b.step_finish("tool-calls")
    b.step_start()
    b.bash(f"python3 - <<'EOF'\n{REVENUE}EOF", "")
    b.tool("write", {"filePath": "/workdir/answer.txt", "content": "West"}, "Wrote file successfully.")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("Recovered from the errors: West.")
    b.step_finish("stop")


def _sleeping(b: TraceBuilder) -> None:
    b.step_start()
    b.bash(f"head -2 {CSV}", "")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("Running a long analysis.")
    b.bash("sleep 300 && echo finished", "finished\n")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("Done.")
    b.step_finish("stop")


def _cut_by_length(b: TraceBuilder) -> None:
    b.step_start()
    b.bash(f"head -3 {CSV}", "")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("Looking at the rows, the region with the highest 2024 revenue is clearly the one that")
    b.step_finish("length")


def _empty_answer(b: TraceBuilder) -> None:
    b.step_start()
    b.bash(f"head -3 {CSV}", "")
    b.step_finish("tool-calls")
    b.step_start()  # the model answers with nothing at all: no text, no call
    b.step_finish("stop")


def _bash_timeout(b: TraceBuilder) -> None:
    b.step_start()
    b.text("Let me wait for the data to settle.")
    b.tool("bash", {"command": "sleep 30 && echo done", "description": "Wait for the data", "timeout": 2000}, "")
    b.step_finish("tool-calls")
    b.step_start()
    b.text("The command timed out; stopping here.")
    b.step_finish("stop")


def _stream_without_finish(b: TraceBuilder) -> None:
    # Every answer is cut without a finish reason (see Scenario.drop_finish_reason).
    for _ in range(400):
        b.step_start()
        b.text("Still working on it.")
        b.step_finish("stop")


@dataclass(frozen=True)
class Scenario:
    name: str
    shows: str
    script: Callable[[TraceBuilder], None]
    timeout_s: float = 120
    cancel_after_s: float | None = None
    harness: str = "builtin"
    drop_finish_reason: bool = False  # the replay model's streams end without a finish_reason
    turn_delay_s: float = 0.0  # the replay model waits this long before each answer
    save_export: bool = False  # also keep the `opencode export` document the episode read


SCENARIOS = [
    Scenario("passing_run", "a passing run: look, compute with python, write the answer (graded 1)", _passing),
    Scenario("failing_run", "a run that writes a wrong answer without looking (graded 0)", _failing),
    Scenario("tool_errors", "a read of a missing file (status error) and a bash command exiting 1, then recovery", _tool_errors),
    Scenario("killed_mid_tool", "cancelled while bash runs `sleep 300`: the call is recovered from opencode export",
             _sleeping, cancel_after_s=10),  # fmt: skip
    Scenario("timeout", "the agent's wall-clock limit (12 s) hit during `sleep 300`", _sleeping, timeout_s=12),
    Scenario("opencode_env_run", "the passing run driven by opencode_env's own factory (transparent proxy "
             "mode), with its proxy trace (`opencode_env_run.proxy.jsonl`)", _passing, harness="opencode-env"),  # fmt: skip
    Scenario("finish_length", "the answer is cut off by the length limit (step_finish `length`)", _cut_by_length),
    Scenario("empty_response", "the model answers with nothing: a step with no text and no call", _empty_answer),
    Scenario("bash_timeout", "a bash call given `timeout: 2000` runs `sleep 30`: OpenCode stops it and still "
             "calls it completed", _bash_timeout),  # fmt: skip
    Scenario("stream_dropped", "the provider's stream ends without a finish reason: OpenCode repeats steps "
             "ending `unknown` until the wall-clock limit (100 s) kills it", _stream_without_finish,
             timeout_s=100, drop_finish_reason=True, turn_delay_s=2.0),  # fmt: skip
    Scenario("export_document", "the passing run, with the `opencode export` document of its session "
             "(`export_document.export.json`): not a trace, but the viewer opens it", _passing, save_export=True),  # fmt: skip
]


class _Quiet:
    def opened(self, trace_path: Path) -> None:
        pass

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        if state in ("failed",):
            print(f"  [{name}] {state}: {message}", file=sys.stderr)

    def received(self, data: bytes) -> None:
        pass


def record(scenario: Scenario, work: Path) -> dict:
    builder = TraceBuilder()
    scenario.script(builder)
    recording = work / f"{scenario.name}.recording.jsonl"
    recording.write_bytes(builder.dumps())
    endpoint = open_endpoint(model=f"replay:{recording}")
    server = endpoint.replay
    server.turn_delay_s = scenario.turn_delay_s
    if scenario.drop_finish_reason:
        server.script.turns = [replace(turn, finish_reason=None) for turn in server.script.turns]
    exported: list[str] = []
    if scenario.save_export:
        _keep_exports(exported)
    spec = EpisodeSpec(
        task=load_task(default_task_root() / "sales-top-region"),
        endpoint=endpoint,
        timeout_s=scenario.timeout_s,
        save_dir=work / "runs",
        harness=scenario.harness,
    )
    episode = Episode(spec, _Quiet())
    if scenario.cancel_after_s is not None:
        threading.Timer(scenario.cancel_after_s, episode.cancel).start()
    result = episode.run()
    if result.error is not None:
        raise SystemExit(f"{scenario.name}: {result.error}")
    shutil.copyfile(result.trace_path, OUT / f"{scenario.name}.jsonl")
    meta = json.loads(result.metadata_path.read_text())
    meta["trace"] = f"{scenario.name}.jsonl"
    meta["model"] = "replay (a scripted recording)"
    if meta.get("proxy_trace"):
        shutil.copyfile(result.trace_path.with_name(meta["proxy_trace"]), OUT / f"{scenario.name}.proxy.jsonl")
        meta["proxy_trace"] = f"{scenario.name}.proxy.jsonl"
    (OUT / f"{scenario.name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    if exported:
        (OUT / f"{scenario.name}.export.json").write_text(exported[-1], encoding="utf-8")
    return row_for(scenario)


def _keep_exports(into: list[str]) -> None:
    """Keep what `opencode export` prints for the episode's session, verbatim, asked at the
    "recover calls" stage while the sandbox still runs (the episode itself asks only when the
    agent did not end on its own, so a passing run's export is asked here)."""
    import shlex

    from smoldata_tui.session import episode as episode_module
    from smoldata_tui.session.episode_agent import opencode_binary
    from smoldata_tui.session.export import first_session_id
    from smoldata_tui.opencode.config import agent_environment
    from smoldata_tui.session.placement import HOME

    original = episode_module.recover_calls

    def recover_calls(result, say, *, session, sandbox, opencode, scrub):
        session_id = first_session_id(result.trace_path)
        if session_id is not None:
            command = f"{shlex.quote(opencode_binary(opencode))} export {shlex.quote(session_id)}"
            exported = sandbox.exec(command, envs=agent_environment(HOME), timeout=60)
            if exported.exit_code == 0:
                into.append(scrub(exported.stdout))
        return original(result, say, session=session, sandbox=sandbox, opencode=opencode, scrub=scrub)

    episode_module.recover_calls = recover_calls


def row_for(scenario: Scenario) -> dict:
    """The README row of a recorded scenario, from its files."""
    from smoldata_tui.store.metadata_reader import load_metadata

    verdict = analyze_path(OUT / f"{scenario.name}.jsonl")[0].verdict
    metadata = load_metadata(OUT / f"{scenario.name}.meta.json")
    grade = metadata.grade.env_reward if metadata.grade else None
    return {"name": scenario.name, "shows": scenario.shows, "status": metadata.status,
            "exit_code": metadata.exit_code, "verdict": verdict.badge(), "grade": grade,
            "recovered": len(metadata.recovered_calls)}  # fmt: skip


def main() -> int:
    from smoldata_tui.session.opencode_env_harness import opencode_env_available

    only = set(sys.argv[1:])
    unknown = only - {scenario.name for scenario in SCENARIOS}
    if unknown:
        raise SystemExit(f"no scenario {', '.join(sorted(unknown))} (scenarios: {', '.join(s.name for s in SCENARIOS)})")
    OUT.mkdir(exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="smoldata-record-") as work:
        for scenario in SCENARIOS:
            if only and scenario.name not in only:
                rows.append(row_for(scenario))
                continue
            if scenario.harness == "opencode-env" and not opencode_env_available():
                print(f"keeping {scenario.name}: opencode_env is not installed", file=sys.stderr)
                rows.append(row_for(scenario))
                continue
            if scenario.harness == "opencode-env" and os.environ.get("OPENCODE_ENV_COMMIT") != OPENCODE_ENV_COMMIT:
                raise SystemExit(f"{scenario.name}: set OPENCODE_ENV_COMMIT to the OpenEnv commit of the opencode_env "
                                 f"on PYTHONPATH; the README names {OPENCODE_ENV_COMMIT}")  # fmt: skip
            print(f"recording {scenario.name} …", file=sys.stderr)
            for old in OUT.glob(f"{scenario.name}.*"):
                old.unlink()
            rows.append(record(scenario, Path(work)))
    lines = [
        "# Traces recorded from the real OpenCode 1.18.31",
        "",
        "Made by `python sample_traces/record_real.py`: a scripted model (the replay model) drives the",
        "real OpenCode in a bubblewrap sandbox on the sample task `sales-top-region`; the calls run for",
        "real and the real grader scores the answer. Each trace has its `.meta.json` beside it; for a",
        "killed run it lists the calls `opencode export` still had running (`recovered_calls`).",
        "`opencode_env_run` went through opencode_env's own `OpenCodeSessionFactory` (`--harness",
        "opencode-env`, transparent proxy mode, the local backend), recorded with `envs/opencode_env` of",
        f"{OPENCODE_ENV_REPO} at commit `{OPENCODE_ENV_COMMIT}` on PYTHONPATH (the package",
        "is not on PyPI). Its proxy trace lies beside it and shows in the viewer's episode tab.",
        "",
        "The failure shapes were recorded the same way, the scripted model answering as each shape needs:",
        "`finish_length` with finish reason `length`, `empty_response` with an empty message, `bash_timeout`",
        "with a bash call whose `timeout` input is 2000 ms, `stream_dropped` with streams that end without",
        "any finish reason (2 s apart, until the 100 s limit), and `export_document.export.json` is what",
        "`opencode export <sessionID>` printed, verbatim, when the episode's own recovery step ran it.",
        "",
        "| trace | what it shows | status | exit code | verdict | grade | recovered calls |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| [`{row['name']}.jsonl`]({row['name']}.jsonl) | {row['shows']} | {row['status']} | {row['exit_code']} "
            f"| `{row['verdict']}` | {row['grade']} | {row['recovered']} |"
        )
    (OUT / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
