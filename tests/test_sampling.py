"""``--sampling temperature=T``: training's sampling policy, set on the capture session as a trainer
sets it (openenv's ``training_sampling``), sent with every request and recorded on every turn; any
other knob or value is a usage error naming it; the Training tab shows requested → applied. The
episodes run the stand-in OpenCode: the policy is ours and the capture proxy's, not OpenCode's."""

from __future__ import annotations

import json

import pytest

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.script import ReplayScript
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.training.sampling import parse_sampling
from smoldata_tui.ui.training_data import summarise_turn
from smoldata_tui.ui.widgets.training_panel import turn_detail_text

from .conftest import SAMPLES, run_cli
from .daytona_local.fixtures import local_daytona  # noqa: F401 - a fixture
from .test_episode_local import Recorder
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture
from .test_training_capture import agent_requests, replay_endpoint

POLICY = {"temperature": 0.3, "top_p": 1.0, "top_k": -1, "min_p": 0.0, "frequency_penalty": 0.0,
          "presence_penalty": 0.0, "repetition_penalty": 1.0}  # fmt: skip


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.usefixtures("standin_sandboxes")
def test_every_request_carries_the_policy_and_every_turn_records_it(tmp_path):
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
    assert "none sent, so the serving engine's own defaults applied" in turn_detail_text(summarise_turn(0, turn), None, []).plain
    asked = {"metadata": {"requested_sampling_params": {"temperature": 0.7}, "sampling_params": {}}}
    assert "temperature 0.7 → not sent: the engine's default applied" in _words(turn_detail_text(summarise_turn(0, asked), None, []).plain)


@pytest.mark.usefixtures("standin_sandboxes")
def test_an_endpoint_without_token_ids_fails_the_capture_stage_with_sampling(tmp_path):
    """openenv applies a training policy only to a trainable capture (it refuses every request of
    the session otherwise): said once, before the agent starts, instead of an agent whose every call fails."""
    endpoint, server = replay_endpoint(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"), answer_level="text")
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                       save_dir=tmp_path / "runs", timeout_s=120, sampling=parse_sampling(["temperature=0.3"]))  # fmt: skip
    result = Episode(spec, Recorder()).run()
    assert result.status == "error" and result.error.stage == "capture proxy", result.error
    assert "--sampling needs an endpoint that returns token ids (capture level text)" in result.error.reason
    assert agent_requests(server) == []  # the agent never ran


async def test_the_launch_forms_sampling_field(tmp_path, monkeypatch):
    """The form refuses what --sampling refuses, naming the field, and hands the policy to the episode."""
    from textual.screen import Screen
    from textual.widgets import Input

    from smoldata_tui.ui.screens import live
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.home import HomeScreen, LaunchForm

    from .test_ui_helpers import wait_for

    started = []

    class Launched(Screen):  # stands in for the live screen: the episode itself is tested above
        def __init__(self, spec, **_options) -> None:
            super().__init__()
            started.append(spec)

    monkeypatch.setattr(live, "LiveScreen", Launched)
    app = LiveApp(runs=tmp_path / "runs")
    async with app.run_test(size=(100, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen), 10)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchForm), 5)
        app.screen.query_one("#model", Input).value = f"replay:{SAMPLES / 'clean_pass.jsonl'}"
        app.screen.query_one("#sampling", Input).value = "temperature=0.3,top_p=0.9"
        app.screen.query_one("#run").press()
        await pilot.pause(0.2)
        error = str(app.screen.query_one("#launch-error").render())
        assert "sampling field" in error and "top_p=1.0" in error and "--" not in error, error
        assert app.focused is app.screen.query_one("#sampling") and not started
        app.screen.query_one("#sampling", Input).value = "temperature=0.3"
        app.screen.query_one("#run").press()
        await wait_for(pilot, lambda: bool(started), 10)
        assert started[0].sampling == POLICY and started[0].capture is True
        started[0].endpoint.close()


def test_a_daytona_episode_samples_as_training_does_inside_the_sandbox(tmp_path, local_daytona):
    """The proxy inside the sandbox (the real daytona SDK against the local Daytona server) gets the
    policy through its config and sets it on its session as the host's proxy does."""
    from smoldata_tui.sandbox.daytona import DaytonaSettings

    from .test_daytona_episode import FAST

    endpoint, server = replay_endpoint(ReplayScript.from_trace(SAMPLES / "clean_pass.jsonl"))
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                       save_dir=tmp_path / "runs", timeout_s=180, backend="daytona", daytona=DaytonaSettings(**FAST),
                       sampling=parse_sampling(["temperature=0.7"]))  # fmt: skip
    result = Episode(spec, Recorder()).run()
    assert result.error is None and result.grade.env_reward == 1.0, result.error
    calls = agent_requests(server)
    assert calls and all({key: request.get(key) for key in POLICY} == {**POLICY, "temperature": 0.7} for request in calls)
    metadata = json.loads(result.metadata_path.read_text())
    assert metadata["capture"]["where"] == "sandbox" and metadata["capture"]["sampling"]["temperature"] == 0.7
    turns = json.loads((result.trace_path.parent / "run.training.json").read_text())["turns"]
    assert len(turns) == len(calls) and all(turn["metadata"]["sampling_params"]["top_k"] == -1 for turn in turns)
    assert local_daytona.sandbox_ids() == []


def test_a_batch_gives_every_episode_the_policy(tmp_path):
    """A batch's episodes are copies of its template spec: the policy is on it once, checked once."""
    from smoldata_tui.commands.batch import batch_plan
    from smoldata_tui.cli import _parser

    args = _parser().parse_args(["run", "--task", "sales-top-region", "--task", "inventory-restock", "--attempts", "2",
                                 "--model", f"replay:{SAMPLES / 'clean_pass.jsonl'}", "--save", str(tmp_path),
                                 "--sampling", "temperature=0.3"])  # fmt: skip
    plan = batch_plan(args)
    assert plan.template.sampling == POLICY and len(plan.tasks) == 2
    args.sampling = ["temperature=0.3", "top_k=50"]
    with pytest.raises(Exception, match="top_k=-1"):
        batch_plan(args)
