"""``F`` on a timeline row forks the episode at that row's step: a confirmation naming the step, a
form with the model (the parent's by default), then a live episode. Pilot drives the real app; the
fork is a real episode (the stand-in OpenCode, tests/standin_agent, in bubblewrap: these tests are
about our screens and fork code), its model from step 3 on a recording."""

from __future__ import annotations

import json
import shutil

from textual.widgets import Input

from smoldata_tui.ui.apps.viewer import ReplayApp
from smoldata_tui.ui.screens.diff import DiffScreen
from smoldata_tui.ui.screens.episode import EpisodeScreen
from smoldata_tui.ui.screens.fork_launch import ConfirmFork, ForkForm
from smoldata_tui.ui.screens.live import LiveScreen

from .test_episode_local import private_cache
from .test_fork import AT_STEP, PARENT, _other_recording
from .test_ui_live import live_screen, wait_for


async def test_f_on_a_row_forks_the_episode_at_its_step_live(tmp_path, monkeypatch, standin_opencode):
    monkeypatch.chdir(tmp_path)  # the fork is saved in ./runs, as `run` saves
    private_cache(tmp_path, monkeypatch, opencode_cache=standin_opencode.parents[2])  # the form starts cached OpenCode
    parent = tmp_path / "parent"
    parent.mkdir()
    shutil.copy(PARENT, parent / "run.jsonl")
    shutil.copy(PARENT.with_name("passing_run.meta.json"), parent / "run.meta.json")
    other = _other_recording(tmp_path / "other.jsonl")
    app = ReplayApp(parent / "run.jsonl")
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen) and app.screen.model.count > 10, 10)
        screen = app.screen
        row = next(event for event in range(screen.model.count) if screen.model.record(event).step == AT_STEP)
        screen.timeline.go_to_event(row)
        await pilot.pause(0.1)
        await pilot.press("F")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmFork), 5)
        assert f"at step {AT_STEP}?" in app.screen.question and f"Steps 1-{AT_STEP - 1} replay" in app.screen.question
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkForm), 5)
        assert app.screen.query_one("#model", Input).value == "replay (a scripted recording)"  # the parent's
        app.screen.query_one("#model", Input).value = f"replay:{other}"
        await pilot.click("#fork")
        await wait_for(pilot, lambda: any(isinstance(s, LiveScreen) for s in app.screen_stack), 10)
        await wait_for(pilot, lambda: not live_screen(app).running, 120)
        result = live_screen(app).result
        # The finished fork opens in the diff against its parent: the first difference at step 3.
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.diff is not None, 20)
        diff = app.screen.diff
        first = diff.pairs[diff.first_divergence]
        assert (diff.call_b(first) or diff.call_a(first)).step == AT_STEP
        assert all(pair.op == "same" for pair in diff.pairs[: diff.first_divergence])
        for _ in range(3):  # Esc puts the focus on the table first, then leaves
            if isinstance(app.screen, DiffScreen):
                await pilot.press("escape")
                await pilot.pause(0.2)
        # Back on the fork's own timeline (the live screen opened it when the agent started).
        assert isinstance(app.screen, EpisodeScreen) and app.screen.path == live_screen(app).result.trace_path
    assert result.status == "finished" and result.grade.env_reward == 0.0  # its model wrote East at step 3
    assert result.trace_path.resolve().parent.parent == tmp_path / "runs"
    meta = json.loads(result.metadata_path.read_text())
    assert meta["fork"]["at_step"] == AT_STEP and meta["fork"]["parent"] == str((parent / "run.jsonl").resolve())
    assert result.divergences == []


async def test_run_fork_on_the_live_screen_opens_the_diff_when_it_ends(tmp_path, standin_opencode):
    from smoldata_tui.session.episode import EpisodeSpec
    from smoldata_tui.replay.fork import load_parent, open_fork_endpoint
    from smoldata_tui.tasks import default_task_root, load_task
    from smoldata_tui.ui.apps.live import LiveApp

    other = _other_recording(tmp_path / "other.jsonl")
    endpoint = open_fork_endpoint(load_parent(PARENT), AT_STEP, model=f"replay:{other}")
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"), endpoint=endpoint,
                       save_dir=tmp_path / "runs", opencode_bin=str(standin_opencode))  # fmt: skip
    app = LiveApp(spec)  # what `smoldata-tui run --fork … ` without --headless opens
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen) and app.screen.diff is not None, 120)
        assert app.screen.a_path == str(PARENT) and app.screen.b_path == str(live_screen(app).result.trace_path)


async def test_f_on_a_trace_without_its_task_says_so_at_once(tmp_path):
    """No run.meta.json names the task: said on F, not after the question and the form."""
    trace = tmp_path / "lone.jsonl"
    shutil.copy(PARENT, trace)  # without its run.meta.json
    app = ReplayApp(trace)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen) and app.screen.model.count > 10, 10)
        screen = app.screen
        screen.timeline.go_to_event(next(event for event in range(screen.model.count) if screen.model.record(event).step == AT_STEP))
        await pilot.press("F")
        await pilot.pause(0.3)
        assert app.screen is screen  # no question, no form
        assert any("no run.meta.json names the parent's task" in note.message and "--task NAME" in note.message
                   for note in app._notifications), [note.message for note in app._notifications]  # fmt: skip
