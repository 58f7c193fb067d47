"""The live screen never looks frozen: elapsed times move, an open step says what it is doing
(inferred, and it says so), and a call the kill cut short appears under the timeline."""

from __future__ import annotations

import time

from smoldata_tui.session.episode_spec import now_utc
from smoldata_tui.store.metadata import EpisodeMetadata, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.trace.build import TraceBuilder
from smoldata_tui.session.sandbox_processes import RunningCommand, probe_sandbox, shell_tool_commands

from .conftest import SAMPLES
from .test_sandbox_support import backend, base_dir, sandbox  # noqa: F401 - fixtures
from .test_ui_helpers import episode, loaded, replay_app, screen_lines, wait_for


def test_the_shell_tool_commands_are_the_ones_opencode_started():
    listing = "\n".join([
        "    1     0   90 bwrap --args 12 -- bash -c trap '' HUP; while read -r _; do :; done",
        "   20     1   80 bash -c cd /root/workdir && opencode run --format json \"$(cat x)\" | tee log",
        "   21    20   80 /root/.opencode/bin/opencode run --format json task",
        "   30    21   42 /usr/bin/bash -c sleep 60 && echo done",
        "   31    30   42 sleep 60",
        "   40     1    1 bash -c ps -eo pid=,ppid=,etimes=,args=",
    ])  # fmt: skip
    assert shell_tool_commands(listing) == [RunningCommand("sleep 60 && echo done", 42.0)]
    # Between fork and exec (or as a subshell) the shell's child has the same command line: the
    # listing CI caught at that moment showed the command twice.
    forked = listing + "\n   32    30    0 /usr/bin/bash -c sleep 60 && echo done"
    assert shell_tool_commands(forked) == [RunningCommand("sleep 60 && echo done", 42.0)]
    # One simple command: bash ran it in its own place, so OpenCode is its parent.
    simple = listing + "\n   50    21   12 python3 /workdir/slow.py --rows 10"
    assert shell_tool_commands(simple) == [RunningCommand("sleep 60 && echo done", 42.0),
                                           RunningCommand("python3 /workdir/slow.py --rows 10", 12.0)]  # fmt: skip


def test_a_real_sandbox_shows_a_command_its_opencode_runs(sandbox, tmp_path):  # noqa: F811
    # A stand-in named `opencode` that runs a shell command the way the bash tool does.
    sandbox.write_text("/root/bin/opencode", "#!/bin/bash\nbash -c 'sleep 123 && echo done'\n")
    job = sandbox.start_bg("chmod +x /root/bin/opencode && /root/bin/opencode run")
    try:
        deadline = time.monotonic() + 10
        found = []
        while not found and time.monotonic() < deadline:
            found = probe_sandbox(sandbox)
            time.sleep(0.1)
        assert [command.command for command in found] == ["sleep 123 && echo done"]
        assert found[0].seconds is not None and found[0].seconds >= 0
    finally:
        job.kill()


def _running_episode(tmp_path, builder: TraceBuilder):
    folder = tmp_path / "run"
    folder.mkdir()
    trace = folder / "run.jsonl"
    trace.write_bytes(builder.dumps())
    save_metadata(metadata_path_for(trace), EpisodeMetadata(task="sales-top-region", status="running",
                                                            started_at=now_utc(), trace="run.jsonl"))  # fmt: skip
    return trace


async def test_an_open_step_shows_as_an_inferred_row_and_the_elapsed_time_ticks(tmp_path):
    builder = TraceBuilder(start_ms=int(time.time() * 1000) - 5000)
    builder.step_start()
    builder.bash("head -3 /home/user/input/sales.csv", "a,b\n")
    builder.step_finish("tool-calls")
    builder.step_start()
    trace = _running_episode(tmp_path, builder)
    app = replay_app(trace, follow=True)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
        screen = episode(app)
        await wait_for(pilot, lambda: screen.model.count == 4, what="the events")
        await wait_for(pilot, lambda: "model thinking" in "\n".join(screen_lines(app)), what="the thinking row")
        shown = "\n".join(screen_lines(app))
        assert "inferred" in shown and "step 2" in shown
        first = screen_lines(app)[0]
        await pilot.pause(2.2)
        assert screen_lines(app)[0] != first  # the header's elapsed time moved on its own
        screen._probed([RunningCommand("sleep 60", 42.0)])
        await pilot.pause()
        shown = "\n".join(screen_lines(app))
        assert "42.0s tool running: bash `sleep 60`" in shown and "inferred from the sandbox's processes" in shown


async def test_a_call_running_when_the_agent_was_killed_appears_under_the_timeline():
    app = replay_app(SAMPLES / "real" / "killed_mid_tool.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        await pilot.pause(0.3)
        shown = "\n".join(screen_lines(app))
        assert "killed while running" in shown and "sleep 300" in shown and "recovered from opencode export" in shown


async def test_a_finished_episode_has_no_inferred_row():
    app = replay_app(SAMPLES / "real" / "passing_run.jsonl")
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await loaded(pilot)
        shown = "\n".join(screen_lines(app))
        assert "model thinking" not in shown and "killed while running" not in shown


async def test_a_live_trace_says_starting_opencode_then_a_verdict_so_far_never_the_warning_badge(tmp_path):
    trace = _running_episode(tmp_path, TraceBuilder())  # OpenCode has written nothing yet
    app = replay_app(trace, follow=True)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "EpisodeScreen", what="the screen")
        await wait_for(pilot, lambda: "starting OpenCode" in "\n".join(screen_lines(app)), what="starting OpenCode")
        assert "Incomplete OpenCode event stream" not in "\n".join(screen_lines(app))
        builder = TraceBuilder(start_ms=int(time.time() * 1000))
        builder.step_start()
        with open(trace, "ab") as handle:
            handle.write(builder.dumps())
        await wait_for(pilot, lambda: "verdict so far" in "\n".join(screen_lines(app)), what="the verdict so far")
        shown = "\n".join(screen_lines(app))
        assert "starting OpenCode" not in shown and "if the trace ended here" in shown
