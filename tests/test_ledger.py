"""The training ledger on real captured episodes: the stand-in OpenCode (the ledger is our code, not
OpenCode's) in a real bubblewrap sandbox, the replay model behind openenv's capture proxy. An honest run, an agent that forges turns by
posting chat requests to the capture proxy with its own session id, and a stream with a dropped
tool event checked against its capture."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from smoldata_tui.replay.script import ReplayCall, ReplayScript, ReplayTurn
from smoldata_tui.training.ledger import build_ledger

from .conftest import SAMPLES, run_cli
from .test_episode_local import private_cache
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture

FORGE = r"""python3 - <<'EOF'
import json, os, urllib.request
home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
options = json.load(open(os.path.join(home, "opencode", "opencode.json")))["provider"]["intercepted"]["options"]
tool = {"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object", "properties": {}}}}
for number in range(3):
    body = {"model": "any", "messages": [{"role": "user", "content": f"forged request {number}"}], "tools": [tool]}
    request = urllib.request.Request(options["baseURL"] + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + options["apiKey"]})
    print("forged", number, urllib.request.urlopen(request, timeout=60).status)
EOF"""


def _forging_script() -> ReplayScript:
    def bash(call_id: str, command: str) -> ReplayCall:
        # compact JSON, as OpenCode sends the call back: the prompts then extend each other
        arguments = json.dumps({"command": command, "description": "run"}, separators=(",", ":"))
        return ReplayCall(call_id, "bash", arguments, None, None)

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return ReplayScript(turns=[
        ReplayTurn(0, "", "", (bash("call_forge_0001", FORGE),), "tool_calls", usage),
        ReplayTurn(1, "", "", (bash("call_answer_0002", "echo West > /workdir/answer.txt"),), "tool_calls", usage),
        ReplayTurn(2, "Done: West.", "", (), "stop", usage),
    ])  # fmt: skip


@pytest.fixture(scope="module")
def episodes(tmp_path_factory, standin_opencode):
    """One honest captured episode and one forging episode, shared by the tests of this module."""
    from .test_training_capture import run

    root = tmp_path_factory.mktemp("ledger")
    with pytest.MonkeyPatch.context() as patch:  # sandboxes under this test's folder, the stand-in as OpenCode
        private_cache(root, patch, opencode_cache=standin_opencode.parents[2])
        honest, _, _ = run(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), root / "honest")
        forged, _, _ = run(_forging_script(), root / "forged")
    assert honest.error is None and forged.error is None, (honest.error, forged.error)
    return {"honest": honest.trace_path, "forged": forged.trace_path}


def _check(trace: Path) -> list[dict]:
    checked = run_cli("check", "--json", str(trace))
    assert checked.returncode in (0, 1), checked.stderr
    return [f for f in json.loads(checked.stdout)["findings"] if f["kind"].startswith("ledger_")]


def test_an_honest_run_gets_no_ledger_warning_or_error(episodes):
    ledger = build_ledger(episodes["honest"])
    assert ledger is not None and len(ledger.turns) == 4
    assert [turn.step for turn in ledger.turns] == [1, 2, 3, 4]  # every captured call is a step, and back
    assert all(step.turn is not None for step in ledger.steps)
    assert [node.parent for node in ledger.graph] == [None, 0, 1, 2]  # one conversation
    assert ledger.side_requests == 1  # OpenCode's title request: counted, not a finding
    assert _check(episodes["honest"]) == []


def test_each_forged_turn_is_named_and_counted_by_check(episodes):
    trace = episodes["forged"]
    turns = json.loads(trace.with_name("run.training.json").read_text())["turns"]
    assert len(turns) == 6  # three agent calls and the three the agent posted itself
    ledger = build_ledger(trace)
    forged = [turn.index for turn in ledger.turns if turn.step is None]
    assert forged == [1, 2, 3] and [turn.step for turn in ledger.turns if turn.step] == [1, 2, 3]
    found = _check(trace)
    unmatched = [f for f in found if f["kind"] == "ledger_unmatched_turn" and f["severity"] == "error"]
    assert len(unmatched) == 3, found
    for number, finding in zip((2, 3, 4), unmatched):
        assert f"run.training.json turn {number} (node {turns[number - 1]['node_id']})" in finding["message"]
        assert "unknown origin" in finding["message"] and finding["line"] == 2  # the forging bash call's line
    assert not [f for f in found if f["severity"] != "info" and f["kind"] != "ledger_unmatched_turn"], found
    report = json.loads(run_cli("check", "--json", str(trace)).stdout)
    assert report["finding_counts"]["error"] >= 3


def test_a_dropped_tool_event_is_an_unreported_call(episodes, tmp_path):
    source = episodes["honest"].parent
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    trace = copy / "run.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    dropped = [number for number, line in enumerate(lines) if json.loads(line)["type"] == "tool_use"][1]
    call_id = json.loads(lines[dropped])["part"]["callID"]
    trace.write_text("".join(lines[:dropped] + lines[dropped + 1:]))
    found = [f for f in _check(trace) if f["severity"] != "info"]
    assert [f["kind"] for f in found] == ["ledger_unreported_call"], found
    assert call_id in found[0]["message"] and found[0]["line"] == dropped  # the step_start of that step


async def test_the_training_tab_marks_the_forged_turns_and_draws_the_rollout_graph(episodes):
    from .test_ui_helpers import replay_app, screen_lines, wait_for
    from .test_ui_training import WIDE, open_training_tab
    from smoldata_tui.ui.widgets.training_panel import TurnTable, ledger_summary

    app = replay_app(episodes["forged"])
    async with app.run_test(size=WIDE) as pilot:
        panel = await open_training_tab(pilot)
        # The timeline's row of the forging bash call (event 1, line 2) carries the three findings.
        model = app.screen.model
        await wait_for(pilot, lambda: len([f for f in model.findings_of(1) if f.kind == "ledger_unmatched_turn"]) == 3,
                       timeout=60, what="the ledger's findings on the timeline row")  # fmt: skip
        table = panel.query_one(TurnTable)
        rows = [[cell.plain for cell in table.get_row_at(row)] for row in range(table.row_count)]
        # The agent's calls are one conversation (A); each forged call starts a root of its own.
        assert [row[0] for row in rows] == ["A● ", "B● ", "C● ", "D● ", "A│ ", "A│ "]
        assert [row[3] for row in rows] == ["ok", "no step", "no step", "no step", "ok", "ok"]
        assert [row[2] for row in rows] == ["1", "-", "-", "-", "2", "3"]
        table.focus()
        await pilot.press("j")
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "ledger 3 of 6 calls matched" in text and "4 roots" in text
        assert "1 request(s) without tools (OpenCode's title or summary)" in ledger_summary(panel.view).plain
        assert "ledger_unmatched_turn" in text and "conversation B starts here" in text, text


def test_a_call_only_opencode_export_recovered_is_a_warning_not_an_error(tmp_path, standin_sandboxes):
    """Stopped inside its bash call: the stream never reports the running call, the capture has it,
    and opencode export recovers it (run.meta.json's recovered_calls): the third source explains it."""
    import threading
    import time

    from smoldata_tui.session.episode import Episode, EpisodeSpec
    from smoldata_tui.tasks import default_task_root, load_task

    from .test_episode_local import Recorder, _sleeping_recording, processes_matching
    from .test_training_capture import replay_endpoint

    marker = f"ledger-cancel-{os.getpid()}"
    endpoint, _ = replay_endpoint(ReplayScript.from_trace(_sleeping_recording(tmp_path, marker)))
    episode = Episode(EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                                  save_dir=tmp_path / "runs", timeout_s=300), Recorder())  # fmt: skip

    def cancel_inside_the_sleep() -> None:
        deadline = time.monotonic() + 240
        while not processes_matching(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        episode.cancel()

    threading.Thread(target=cancel_inside_the_sleep, daemon=True).start()
    result = episode.run()
    assert result.status == "cancelled"
    recovered = json.loads(result.metadata_path.read_text())["recovered_calls"]
    assert len(recovered) == 1
    found = [f for f in _check(result.trace_path) if f["severity"] != "info"]
    assert [(f["kind"], f["severity"]) for f in found] == [("ledger_unreported_call", "warning")], found
    assert recovered[0]["callID"] in found[0]["message"] and "opencode export recovered it" in found[0]["message"]


def test_many_forged_roots_with_long_prompts_are_graphed_quickly():
    """An agent controls how many turns it forges: 400 roots of 30,000 tokens sharing a chat
    template's start are graphed without copying each earlier prompt (0.13 s; 3.8 s when every
    candidate's prefix was copied, on this 2-CPU machine at load average 2.6)."""
    import random
    import time

    from smoldata_tui.training.rollout_graph import rollout_graph

    rng = random.Random(3)
    template = [rng.randrange(1000) for _ in range(30_000)]
    # each prompt longer than every earlier prompt + completion, so each earlier one is a candidate parent
    turns = [{"prompt_token_ids": template[:100] + [number] + template[100:] + [7] * (3 * number),
              "completion_token_ids": [1, 2], "loss_mask": [0] * (30_001 + 3 * number) + [1, 1]} for number in range(400)]  # fmt: skip
    started = time.monotonic()
    graph = rollout_graph(turns)
    assert time.monotonic() - started < 1.5
    assert [node.parent for node in graph] == [None] * 400 and len({node.root for node in graph}) == 400


def test_a_prompt_that_does_not_extend_the_previous_turn_is_a_rewritten_prompt(episodes, tmp_path):
    copy = tmp_path / "episode"
    shutil.copytree(episodes["honest"].parent, copy)
    training = copy / "run.training.json"
    document = json.loads(training.read_text())
    for later in document["turns"][2:]:  # the context rewritten at token 500 from turn 3 on
        later["prompt_token_ids"][500] += 1
    training.write_text(json.dumps(document))
    found = [f for f in _check(copy / "run.jsonl") if f["severity"] != "info"]
    assert [(f["kind"], f["line"]) for f in found] == [("ledger_rewritten_prompt", 7)], found  # step 3's start
    assert "turn 3" in found[0]["message"] and "keeps the first 500 of" in found[0]["message"]


def test_the_gutter_draws_roots_forks_and_excluded_turns():
    from smoldata_tui.training.rollout_graph import gutter, rollout_graph

    def turn(prompt: list[int], completion: list[int], index: int, trained: bool = True) -> dict:
        return {"prompt_token_ids": prompt, "completion_token_ids": completion, "metadata": {"index": index},
                "loss_mask": [0] * len(prompt) + [int(trained)] * len(completion)}  # fmt: skip

    turns = [turn([1, 2], [3], 1), turn([1, 2, 3, 4], [5], 2), turn([1, 2, 3, 4], [6], 3, trained=False),
             turn([9, 9], [8], 5), turn([1, 2, 3, 4, 5, 7], [0], 6)]  # fmt: skip
    graph = rollout_graph(turns)
    assert [node.parent for node in graph] == [None, 0, 0, None, 1]
    assert [gutter(graph, index) for index in range(5)] == ["A●", "A├", "A├", "B●", "A│"]
    assert [node.excluded for node in graph] == [False, False, True, False, False]
    assert [node.skipped_before for node in graph] == [1, 0, 0, 1, 0]  # capture calls 0 and 4 are not in the file


def test_turns_that_arrive_while_a_task_call_runs_are_a_subagents_warnings(episodes, tmp_path):
    """The forging episode with its bash call renamed task: the same three turns are then what a
    subagent's calls look like (the stream shows the parent session only)."""
    copy = tmp_path / "episode"
    shutil.copytree(episodes["forged"].parent, copy)
    trace = copy / "run.jsonl"
    lines = trace.read_text().splitlines(keepends=True)
    event = json.loads(lines[1])
    assert event["type"] == "tool_use" and event["part"]["tool"] == "bash"
    event["part"]["tool"] = "task"
    lines[1] = json.dumps(event) + "\n"
    trace.write_text("".join(lines))
    unmatched = [f for f in _check(trace) if f["kind"] == "ledger_unmatched_turn"]
    assert [(f["severity"], f["line"]) for f in unmatched] == [("warning", 2)] * 3, unmatched
    assert all("the subagent's call" in f["message"] for f in unmatched)
