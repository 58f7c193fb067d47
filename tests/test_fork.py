"""``run --fork EPISODE --at-step N``: the stand-in OpenCode (tests/standin_agent, which sends
OpenCode's own recorded requests: these tests are about our fork code) in bubblewrap, the real
grader, the real capture proxy; the parent is a real OpenCode recording of sales-top-region (4
steps: look, compute "West" in python, write it, end). The model from step N on is a replay server
in this process that logs every request it receives, so the tests see exactly what reached it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest

from smoldata_tui.replay.script import ReplayCall, ReplayScript, ReplayTurn
from smoldata_tui.replay.server import ReplayServer
from smoldata_tui.trace.build import TraceBuilder

from .conftest import ROOT, SAMPLES, run_cli

PARENT = SAMPLES / "real" / "passing_run.jsonl"
AT_STEP = 3
EDITED_CALL = "call_qHLlftpDelne2kK47C2iybmN"  # step 2's python call; its recorded output is "West\n"
EDITED = "EDITED BY THE FORK: the totals say East"
KEY = "sk-fork-test-5d1e9a"


class LoggingModel(ReplayServer):
    """The replay model, keeping every chat request whole (messages included)."""

    def __init__(self, script: ReplayScript) -> None:
        super().__init__(script)
        self.logged: list[dict] = []
        self._log_lock = threading.Lock()

    def answer(self, request):
        with self._log_lock:
            self.logged.append(request)
        return super().answer(request)


def _writes_east() -> ReplayScript:
    """Answers by position: its turns 1-2 are never asked for in a fork at 3; turn 3 writes East."""
    unused = [ReplayTurn(index, "unused", "", (), "stop", None) for index in range(AT_STEP - 1)]
    write = ReplayCall("call_fork_write", "write", json.dumps({"filePath": "/workdir/answer.txt", "content": "East\n"}),
                       None, None)  # fmt: skip
    return ReplayScript([*unused, ReplayTurn(2, "Writing East.", "", (write,), "tool_calls", None),
                         ReplayTurn(3, "Done.", "", (), "stop", None)])  # fmt: skip


def _editor(folder: Path) -> Path:
    """An $EDITOR that keeps what it was given and saves EDITED instead."""
    script = folder / "editor.sh"
    script.write_text(f'#!/bin/sh\ncp "$1" {folder}/given.txt\nprintf %s "{EDITED}" > "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _steps_by_line(trace: Path) -> dict[int, int]:
    """Line number → step (counted from 1 at each step_start, as the timeline counts)."""
    steps, step = {}, 0
    for number, line in enumerate(trace.read_text().splitlines(), start=1):
        if json.loads(line).get("type") == "step_start":
            step += 1
        steps[number] = step
    return steps


def _fork_cli(*args: str, editor: Path | None = None):
    env = {"EDITOR": str(editor), "VISUAL": str(editor)} if editor else {}  # $VISUAL wins when set
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return run_cli("run", *args, "--headless", timeout=240)
    finally:
        for name, value in old.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)


@pytest.fixture(scope="module")
def edited_fork(tmp_path_factory, standin_opencode):
    folder = tmp_path_factory.mktemp("fork")
    parent = folder / "parent"
    parent.mkdir()
    shutil.copy(PARENT, parent / "run.jsonl")
    shutil.copy(PARENT.with_name("passing_run.meta.json"), parent / "run.meta.json")
    model = LoggingModel(_writes_east()).start()
    try:
        run = _fork_cli("--fork", str(parent), "--at-step", str(AT_STEP), "--edit", "--model", "forked-model",
                        "--base-url", model.base_url, "--api-key", KEY, "--save", str(folder / "runs"),
                        "--opencode-bin", str(standin_opencode), editor=_editor(folder))  # fmt: skip
    finally:
        model.close()
    assert run.returncode == 0, run.stderr[-3000:]
    line = json.loads(run.stdout.splitlines()[-1])
    return folder, parent / "run.jsonl", Path(line["trace"]), line, model.logged, run.stderr


def test_the_model_receives_requests_only_from_step_n(edited_fork):
    _, _, _, _, logged, _ = edited_fork
    assert logged, "the forked model was never asked"
    # Every request it got is an agent turn (OpenCode's title request stayed with the replay) and
    # carries the N-1 replayed steps: the first at step N, the next at N+1.
    assert all(request.get("tools") for request in logged)
    assistants = [sum(m.get("role") == "assistant" for m in request["messages"]) for request in logged]
    assert assistants == [AT_STEP - 1, AT_STEP]


def test_an_edited_tool_output_reaches_the_model_at_step_n(edited_fork):
    folder, _, fork_trace, line, logged, _ = edited_fork
    assert (folder / "given.txt").read_text() == "West\n"  # the editor got what step N's request carries
    for request in logged:  # at N, and at every later step (OpenCode re-sends the history)
        tool = [m for m in request["messages"] if m.get("role") == "tool" and m.get("tool_call_id") == EDITED_CALL]
        assert [m["content"] for m in tool] == [EDITED]
    # OpenCode ran the call for real: its trace keeps the real output, the model read the edit.
    recorded = [json.loads(text)["part"] for text in fork_trace.read_text().splitlines()
                if json.loads(text).get("type") == "tool_use"]  # fmt: skip
    assert [p["state"]["output"] for p in recorded if p["callID"] == EDITED_CALL] == ["West\n"]
    assert line["fork"]["edited"] is True and line["fork"]["edited_call"] == EDITED_CALL


def test_steps_before_n_equal_the_parents_and_the_diff_starts_at_n(edited_fork):
    _, parent, fork_trace, line, _, stderr = edited_fork
    diff = run_cli("diff", "--json", str(parent), str(fork_trace))
    report = json.loads(diff.stdout)
    parent_steps, fork_steps = _steps_by_line(parent), _steps_by_line(fork_trace)
    for pair in report["pairs"]:
        step = fork_steps[pair["b_line"]] if pair["b_line"] else parent_steps[pair["a_line"]]
        if step < AT_STEP:
            assert pair["op"] == "same" and not pair["output_differs"], pair
    first = report["first_divergence"]
    assert first is not None and fork_steps[first["b_line"]] == AT_STEP  # the model wrote East, not West
    assert line["fork"]["first_step"] == AT_STEP and line["fork"]["identical"] is False
    assert line["divergences"] == []  # today's environment answered steps 1-2 as recorded
    assert f"first difference at step {AT_STEP} (forked at {AT_STEP})" in stderr
    assert line["grade"]["env_reward"] == 0.0  # East is wrong: the fork is graded as any run


def test_run_meta_names_the_parent_and_the_step(edited_fork):
    _, parent, _, line, _, _ = edited_fork
    meta = json.loads(Path(line["metadata"]).read_text())
    assert meta["fork"] == {"parent": str(parent.resolve()), "at_step": AT_STEP, "model": "forked-model",
                            "edited": True, "edited_call": EDITED_CALL}  # fmt: skip
    assert meta["task"] == "sales-top-region"
    assert meta["model"] == f"fork:{parent.resolve()}@{AT_STEP}+edit:forked-model"
    assert KEY not in Path(line["metadata"]).read_text()


def _other_recording(path: Path) -> Path:
    """A recording whose step 3 writes East: as --model replay:PATH it answers steps by position."""
    builder = TraceBuilder()
    for _ in range(AT_STEP - 1):
        builder.step_start()
        builder.text("unused")
        builder.step_finish("stop")
    builder.step_start()
    builder.tool("write", {"filePath": "/workdir/answer.txt", "content": "East\n"}, "Wrote file successfully.",
                 call_id="call_other_write")  # fmt: skip
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("Done.")
    builder.step_finish("stop")
    path.write_bytes(builder.dumps())
    return path


def test_k_forks_of_one_step_are_one_group(tmp_path, standin_opencode):
    other = _other_recording(tmp_path / "other.jsonl")
    run = _fork_cli("--fork", str(PARENT), "--at-step", str(AT_STEP), "--attempts", "2", "--concurrency", "2",
                    "--model", f"replay:{other}", "--save", str(tmp_path / "runs"), "--opencode-bin", str(standin_opencode))  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    batch = json.loads(run.stdout.splitlines()[-1])["batch"]
    groups = run_cli("check", "--groups", "--json", batch)
    report = json.loads(groups.stdout.splitlines()[-1])
    assert [(g["task"], g["attempts"], g["rewards"]) for g in report["groups"]] == [
        ("sales-top-region", 2, [0.0, 0.0])]  # fmt: skip
    assert report["groups"][0]["model"] == f"fork:{PARENT}@{AT_STEP}:replay:{other}"
    for meta in Path(batch).glob("*/run.meta.json"):
        assert json.loads(meta.read_text())["fork"]["at_step"] == AT_STEP


@pytest.mark.parametrize(("args", "message"), [
    (["--fork", str(PARENT), "--at-step", "0"], "--at-step counts steps from 1, as the timeline does: 0 is not one"),
    (["--fork", str(PARENT), "--at-step", "5"], "--at-step 5: the parent"),
    (["--fork", str(SAMPLES / "real"), "--at-step", "1"], "no run.jsonl in that folder"),
    (["--fork", str(PARENT)], "--fork needs --at-step N"),
    (["--task", "sales-top-region", "--at-step", "2"], "--at-step and --edit go with --fork EPISODE"),
    (["--fork", str(PARENT), "--at-step", "2", "--task", "inventory-restock"], "the parent ran task 'sales-top-region'"),
    (["--fork", str(PARENT), "--at-step", "2", "--tasks", str(SAMPLES)], f"no task 'sales-top-region' in {SAMPLES}"),
])  # fmt: skip
def test_usage_errors_exit_2_with_a_clear_message(args, message):
    run = run_cli("run", *args, "--model", "m", "--headless", cwd=ROOT)
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr


def _text_then_call(path: Path) -> Path:
    """Step 1 only talks; step 2 looks at the input."""
    builder = TraceBuilder()
    builder.step_start()
    builder.text("Let me think.")
    builder.step_finish("stop")
    builder.step_start()
    builder.bash("ls /home/user/input", "sales.csv\n", call_id="call_look")
    builder.step_finish("tool-calls")
    path.write_bytes(builder.dumps())
    return path


def test_edit_and_task_usage_errors(tmp_path):
    bare = _text_then_call(tmp_path / "bare.jsonl")  # no run.meta.json beside it
    run = run_cli("run", "--fork", str(bare), "--at-step", "2", "--model", "m", "--headless")
    assert run.returncode == 2 and "no run.meta.json names its task: pass --task NAME" in run.stderr
    run = run_cli("run", "--fork", str(bare), "--at-step", "2", "--edit", "--task", "sales-top-region", "--model", "m",
                  "--headless")  # fmt: skip
    assert run.returncode == 2 and "step 1 made no tool call, so step 2's request carries no tool output" in run.stderr
    run = _fork_cli("--fork", str(PARENT), "--at-step", "2", "--edit", "--model", "m", editor=Path("/bin/false"))
    assert run.returncode == 2 and "the editor exited with status 1; no fork started" in run.stderr


def _post(url: str, body: dict) -> bytes:
    import urllib.request

    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read()


def test_at_step_1_the_edited_prompt_reaches_the_model_and_the_title_request_does_not():
    from smoldata_tui.replay.fork import ForkParent
    from smoldata_tui.replay.fork_server import ForkEdit, ForkServer
    from smoldata_tui.replay.model_endpoint import ModelEndpoint

    model = LoggingModel(_writes_east()).start()
    target = ModelEndpoint(base_url=model.base_url, model="forked-model", api_key=KEY, replay=model)
    parent = ForkParent(PARENT, None, ReplayScript.from_trace(PARENT))
    server = ForkServer(parent.script, 1, target, edit=ForkEdit("the edited prompt")).start()
    try:
        system = {"role": "system", "content": "You are OpenCode."}
        _post(server.base_url, {"model": "forked-model", "messages": [system, {"role": "user", "content": "Title?"}]})
        answer = _post(server.base_url, {"model": "forked-model", "tools": [{"type": "function"}],
                                         "messages": [system, {"role": "user", "content": "the task"}]})  # fmt: skip
    finally:
        server.close()
    assert [m["content"] for m in model.logged[0]["messages"]] == ["You are OpenCode.", "the edited prompt"]
    assert len(model.logged) == 1 and model.logged[0]["model"] == "forked-model"
    assert json.loads(answer)["choices"][0]["message"]["content"] == "unused"  # M's own turn 1, relayed back


def test_fork_divergence_says_identical_and_a_parent_it_cannot_read(tmp_path):
    from smoldata_tui.replay.fork import fork_divergence

    same = fork_divergence(PARENT, PARENT)
    assert same == {"identical": True, "first_step": None, "counts": {"same": 3, "changed": 0, "only_a": 0, "only_b": 0}}
    gone = fork_divergence(tmp_path / "gone.jsonl", PARENT)
    assert gone["identical"] is None and "no such file" in gone["error"]


def test_divergences_before_n_are_reported_and_the_edit_is_not_one():
    from smoldata_tui.replay.fork_server import ForkEdit, ForkServer
    from smoldata_tui.replay.model_endpoint import ModelEndpoint

    script = ReplayScript.from_trace(PARENT)
    first, second = (turn.calls[0] for turn in script.turns[:2])
    model = LoggingModel(_writes_east()).start()
    target = ModelEndpoint(base_url=model.base_url, model="forked-model", api_key=KEY, replay=model)
    server = ForkServer(script, AT_STEP, target, edit=ForkEdit(EDITED, second.call_id)).start()

    def history(second_output: str | None) -> list[dict]:
        messages = [{"role": "system", "content": "Working directory: /w"}, {"role": "user", "content": "task"}]
        for call, output in ((first, "a different head\n"), (second, second_output)):
            if output is None:
                break
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]})
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": output})
        return messages

    tools = [{"type": "function", "function": {"name": "bash"}}]
    try:
        _post(server.base_url, {"model": "m", "tools": tools, "messages": history(None)})  # step 2: the replay
        _post(server.base_url, {"model": "m", "tools": tools, "messages": history(second.output)})  # step 3: M
    finally:
        server.close()
    assert [(d["kind"], d["call_id"]) for d in server.divergences] == [("result_changed", first.call_id)]
    assert len(model.logged) == 1 and model.logged[0]["messages"][-1]["content"] == EDITED
