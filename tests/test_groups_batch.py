"""``check --groups`` on a real batch: the stand-in OpenCode (tests/standin_agent: the test is about
our batch and group code, not OpenCode) in bubblewrap, the real graders, a scripted
endpoint whose right and wrong attempts are known (tests/scripted_endpoint.py). One task's attempts
are right, wrong (the same first step, then the same tool with another command) and right with a
repeated call id (the wrapper rejects its trace); the other task's two attempts are both right."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from smoldata_tui.replay.script import ReplayCall, ReplayScript, ReplayTurn
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace.build import TraceBuilder

from .conftest import ROOT, run_cli
from .scripted_endpoint import ScriptedEndpoint, correct_answer
from .test_batch_run import KEY, batch_command

SPLIT_TASK, SAME_TASK = "sales-top-region", "employees-median-salary"
LOOK = "ls /home/user/input"


def _answering(tag: str, answer: str) -> bytes:
    """Step 1 looks at the input, step 2 writes ``answer`` with bash, step 3 ends."""
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(LOOK, "", call_id=f"call_{tag}_look")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.bash(f"echo {answer} > /workdir/answer.txt", "", call_id=f"call_{tag}_answer")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("The answer is written.")
    builder.step_finish("stop")
    return builder.dumps()


def _repeating_ids(tag: str, answer: str) -> ReplayScript:
    """The right answer, but the model gives its second call the id of its first."""
    def bash(command: str) -> ReplayCall:
        return ReplayCall(f"call_{tag}_0001", "bash", json.dumps({"command": command, "description": "run"}), None, None)

    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return ReplayScript(turns=[
        ReplayTurn(0, "", "", (bash(LOOK),), "tool_calls", usage),
        ReplayTurn(1, "", "", (bash(f"echo {answer} > /workdir/answer.txt"),), "tool_calls", usage),
        ReplayTurn(2, "Done.", "", (), "stop", usage),
    ])  # fmt: skip


@pytest.fixture
def endpoint():
    split, same = (load_task(default_task_root() / name) for name in (SPLIT_TASK, SAME_TASK))
    right, other = correct_answer(split), correct_answer(same)
    server = ScriptedEndpoint(KEY, [
        (split, [("ok", _answering("ok", right)), ("no", _answering("no", "Nowhere")), ("dup", _repeating_ids("dup", right))]),
        (same, [("same1", _answering("same1", other)), ("same2", _answering("same2", other))]),
    ])  # fmt: skip
    yield server
    server.close()


def test_a_real_batchs_groups_have_its_rewards_advantages_rejections_and_first_split(tmp_path, endpoint, standin_opencode):
    command, env = batch_command(tmp_path, endpoint, standin_opencode.parents[2])  # both tasks, run --headless with the scripted endpoint
    command[command.index("--attempts") + 1] = "3"
    command[command.index("--concurrency") + 1] = "2"
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    batch = Path(json.loads(done.stdout.strip().splitlines()[-1])["batch"])
    runs = json.loads((batch / "batch.json").read_text())["runs"]

    checked = run_cli("check", "--groups", "--json", str(batch), timeout=300)
    groups = {group["task"]: group for group in json.loads(checked.stdout.strip().splitlines()[-1])["groups"]}
    assert set(groups) == {SPLIT_TASK, SAME_TASK}

    split = groups[SPLIT_TASK]
    ordered = [run for run in runs if run["task"] == SPLIT_TASK]  # batch order: attempt 1, 2, 3
    rewards = [run["env_reward"] for run in ordered]
    assert sorted(rewards) == [0.0, 1.0, 1.0] and split["rewards"] == rewards and split["attempts"] == 3
    mean, std = statistics.fmean(rewards), statistics.stdev(rewards)
    assert split["mean"] == pytest.approx(mean, rel=1e-12) and split["std"] == pytest.approx(std, rel=1e-12)
    assert split["advantages"] == pytest.approx([reward - mean for reward in rewards], rel=1e-12)
    assert split["advantages_scaled"] == pytest.approx([(reward - mean) / (std + 1e-4) for reward in rewards], rel=1e-12)
    assert split["zero_variance"] is False
    assert split["rejected"] == [index for index, run in enumerate(ordered) if run["verdict"] == "rejected"]
    assert len(split["rejected"]) == 1 and ordered[split["rejected"][0]]["env_reward"] == 1.0  # the repeated ids
    assert split["first_split"]["step"] == 2  # step 1 is the same look on every attempt
    assert split["first_split"]["passing"] == ["bash"] and split["first_split"]["failing"] == ["bash"]
    assert any("Nowhere" in call for call in split["first_split"]["failing_calls"])

    same = groups[SAME_TASK]
    assert same["rewards"] == [1.0, 1.0, 1.0] and same["zero_variance"] is True and same["first_split"] is None
    assert same["std"] == 0.0 and same["advantages"] == [0.0, 0.0, 0.0]
