"""``--sampling temperature=T``: training's sampling policy, set on the capture session as a trainer
sets it (openenv's ``training_sampling``), sent with every request and recorded on every turn; any
other knob or value is a usage error naming it; the Training tab shows requested → applied."""

from __future__ import annotations

import json

import pytest

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.session.replay_script import ReplayScript
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.training.sampling import parse_sampling
from smoldata_tui.ui.training_data import summarise_turn
from smoldata_tui.ui.widgets.training_panel import turn_detail_text

from .conftest import SAMPLES, run_cli
from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_local import Recorder, sandboxes  # noqa: F401 - a fixture
from .test_training_capture import agent_requests, replay_endpoint

POLICY = {"temperature": 0.3, "top_p": 1.0, "top_k": -1, "min_p": 0.0, "frequency_penalty": 0.0,
          "presence_penalty": 0.0, "repetition_penalty": 1.0}  # fmt: skip


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.usefixtures("opencode_bin")
def test_every_request_carries_the_policy_and_every_turn_records_it(tmp_path, sandboxes):
    endpoint, server = replay_endpoint(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"))
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                       save_dir=tmp_path / "runs", timeout_s=120, sampling=parse_sampling(["temperature=0.3"]))  # fmt: skip
    recorder = Recorder()
    result = Episode(spec, recorder).run()
    assert result.error is None and result.grade.env_reward == 1.0, (result.error, recorder.stages)
    calls = agent_requests(server)  # the endpoint's own log of what reached it
    assert len(calls) >= 3
    for request in calls:
        assert {key: request.get(key) for key in POLICY} == POLICY, request
    run_dir = result.trace_path.parent
    turns = json.loads((run_dir / "run.training.json").read_text())["turns"]
    assert len(turns) == len(calls)  # one turn per model call
    for turn in turns:
        assert turn["metadata"]["sampling_params"] == POLICY
    assert json.loads(result.metadata_path.read_text())["capture"]["sampling"] == POLICY
    said = [message for name, _, message in recorder.stages if name == "capture proxy"]
    assert any("sampling: temperature 0.3, top_p 1, top_k -1" in message for message in said), said
    shown = turn_detail_text(summarise_turn(0, turns[0]), None, []).plain
    assert "temperature - → 0.3" in _words(shown) and "top_k - → -1" in _words(shown), shown


@pytest.mark.parametrize(("option", "named"), [
    (["--sampling", "top_p=0.9"], "top_p=1.0"),
    (["--sampling", "temperature=0.3", "--sampling", "top_k=40"], "top_k=-1"),
    (["--sampling", "temperature=0.3,min_p=0.05"], "min_p=0.0"),
    (["--sampling", "temperature=0.3,seed=7"], "seed"),
    (["--sampling", "temperature=0"], "finite positive temperature"),
    (["--sampling", "temperature=hot"], "temperature: 'hot' is not a number"),
    (["--sampling", "top_p=1.0"], "needs temperature=T"),
    (["--sampling", "temperature=0.3", "--no-capture"], "cannot be used with --no-capture"),
])  # fmt: skip
def test_another_knob_or_value_is_a_usage_error_naming_it(tmp_path, option, named):
    done = run_cli("run", "--task", "sales-top-region", "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}",
                   "--headless", "--save", str(tmp_path), *option)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []  # refused before any episode


def test_a_turn_without_sampling_says_engine_defaults():
    turn = {"prompt_token_ids": [1], "completion_token_ids": [2], "metadata": {"sampling_params": {},
            "requested_sampling_params": {}}}  # fmt: skip
    assert "none sent: engine defaults" in turn_detail_text(summarise_turn(0, turn), None, []).plain
    asked = {"metadata": {"requested_sampling_params": {"temperature": 0.7}, "sampling_params": {}}}
    assert "temperature 0.7 → engine default" in _words(turn_detail_text(summarise_turn(0, asked), None, []).plain)
