"""Ending a hung tool call in a live episode: a real bubblewrap sandbox, the replay model. The
agent's ``sleep 300`` is ended from the host; OpenCode's bash tool returns, the agent goes on to
write its answer, the episode is graded, and the cancellation is recorded. The live timeline's
``K`` runs the stand-in OpenCode (it is about our screen and our cancel); the episode-level test
keeps the real one, since it alone proves that OpenCode's bash tool returns once its command's
processes are ended (the stand-in's returns as soon as its shell's output closes, so ``K`` would
pass even if the cancel ended the shell alone, where OpenCode 1.18.31 waits out its timeout)."""

from __future__ import annotations

import json
import os
import threading
import time

from smoldata_tui.session.episode import Episode, EpisodeSpec
from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.tasks import default_task_root, load_task
from smoldata_tui.trace import analyze_bytes
from smoldata_tui.trace.build import TraceBuilder

from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .scripted_endpoint import correct_answer
from .test_episode_local import Recorder, processes_matching, sandbox_dirs, sandboxes  # noqa: F401 - fixtures
from .test_episode_local import standin_sandboxes  # noqa: F401 - a fixture


def _hanging_then_answering(tmp_path, marker: str, answer: str, command: str | None = None):
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(command or f"sleep 300 && echo {marker}", f"{marker}\n", call_id="call_hang")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.tool("write", {"filePath": "/workdir/answer.txt", "content": answer + "\n"}, "Wrote file successfully.",
                 call_id="call_write")  # fmt: skip
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("Done.")
    builder.step_finish("stop")
    path = tmp_path / "hanging.jsonl"
    path.write_bytes(builder.dumps())
    return path


# The real OpenCode: whether its bash tool returns once our kill ends the shell's children, rather
# than waiting out its own 120 s timeout (sandbox_processes.end_commands), is OpenCode's behaviour.
def test_a_hung_call_is_ended_the_agent_goes_on_and_the_episode_records_it(tmp_path, sandboxes, opencode_bin):
    task = load_task(default_task_root() / "sales-top-region")
    marker = f"hung-call-{os.getpid()}"
    recording = _hanging_then_answering(tmp_path, marker, correct_answer(task))
    spec = EpisodeSpec(task=task, endpoint=open_endpoint(model=f"replay:{recording}"), timeout_s=240,
                       save_dir=tmp_path / "runs", capture=False)  # fmt: skip
    episode = Episode(spec, Recorder())
    ended: list = []

    def end_the_call_once_it_runs() -> None:
        deadline = time.monotonic() + 200
        while not processes_matching(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        ended.extend(episode.cancel_running_calls())

    started = time.monotonic()
    threading.Thread(target=end_the_call_once_it_runs, daemon=True).start()
    result = episode.run()
    assert time.monotonic() - started < 200  # not the 300 s the call would have taken
    assert [command.command for command in ended] == [f"sleep 300 && echo {marker}"]
    assert result.status == "finished" and result.grade.env_reward == 1.0  # the agent went on and answered
    events = [json.loads(line) for line in result.trace_path.read_bytes().splitlines()]
    calls = [event["part"] for event in events if event.get("type") == "tool_use"]
    assert [call["tool"] for call in calls] == ["bash", "write"]
    assert marker not in json.dumps(calls[0]["state"].get("output", ""))  # it never got to echo
    # Ended by us, not by OpenCode's own 120 s shell timeout (which alone does not notice a killed shell).
    assert "exceeding timeout" not in calls[0]["state"]["output"]
    assert calls[0]["state"]["time"]["end"] - calls[0]["state"]["time"]["start"] < 60_000
    assert analyze_bytes(result.trace_path.read_bytes())[0].verdict.native_tool_calls == 2
    saved = json.loads(result.metadata_path.read_text())["cancelled_calls"]
    assert [call["command"] for call in saved] == [f"sleep 300 && echo {marker}"] and saved[0]["at"]
    assert processes_matching(marker) == []
    assert sandbox_dirs(sandboxes) == []


async def test_on_the_live_timeline_K_asks_naming_the_call_then_ends_it_and_the_agent_goes_on(tmp_path,
                                                                                            standin_sandboxes):  # fmt: skip
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.episode import EpisodeScreen
    from smoldata_tui.ui.screens.live import ConfirmCancel

    from .test_ui_live import live_screen, spec_for, wait_for

    task = load_task(default_task_root() / "sales-top-region")
    marker = f"hung-live-{os.getpid()}"
    app = LiveApp(spec_for(_hanging_then_answering(tmp_path, marker, correct_answer(task)), tmp_path / "runs"))
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen) and processes_matching(marker), 200)
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmCancel), 30)
        assert f"sleep 300 && echo {marker}" in app.screen.question
        await pilot.press("y")
        await wait_for(pilot, lambda: not live_screen(app).running, 100)
        result = live_screen(app).result
        assert result.status == "finished" and result.grade.env_reward == 1.0
        saved = json.loads(result.metadata_path.read_text())["cancelled_calls"]
        assert [call["command"] for call in saved] == [f"sleep 300 && echo {marker}"]
        await pilot.press("q")


async def test_K_on_a_simple_command_says_it_cannot_be_ended_so_opencode_notices(tmp_path, standin_sandboxes):
    """``sleep 300.N`` alone: bash runs it in its own place, so no shell is left to exit, and OpenCode
    1.18.31's bash tool does not notice a process a signal ended (measured 2026-12-05 with the real
    binary: killed by TERM, its tool still returned only at its 120 s timeout). The live row sees the
    command; K says why it leaves it running instead of 'no tool call is running now'."""
    from smoldata_tui.session.sandbox_processes import probe_sandbox
    from smoldata_tui.ui.apps.live import LiveApp
    from smoldata_tui.ui.screens.episode import EpisodeScreen

    from .test_ui_live import live_screen, spec_for, wait_for

    task = load_task(default_task_root() / "sales-top-region")
    command = f"sleep 300.{os.getpid()}"
    app = LiveApp(spec_for(_hanging_then_answering(tmp_path, command, correct_answer(task), command), tmp_path / "runs"))
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, EpisodeScreen) and processes_matching(command), 200)
        running = probe_sandbox(live_screen(app).episode._sandbox)
        assert [(each.command, each.in_shell) for each in running] == [(command, False)]
        await pilot.press("K")
        await wait_for(pilot, lambda: any("runs without a shell" in str(n.message) for n in app._notifications), 30)
        assert processes_matching(command)  # left running: ending it would gain nothing
        assert live_screen(app).episode.cancel_running_calls() == []
        live_screen(app).episode.cancel("the test is over")
        await wait_for(pilot, lambda: not live_screen(app).running, 60)
    assert not processes_matching(command)
