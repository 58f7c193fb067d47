"""Sizes the agent controls, through a whole real episode (the stand-in OpenCode, tests/standin_agent,
in bubblewrap, replay model: the caps are ours, not OpenCode's): a 1 GiB sparse log costs the host a
capped trace and bounded memory, and the cap is recorded; and ``--timeout`` bounds the whole
episode, staging included."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from smoldata_tui.session.log_follower import MAX_TRACE_BYTES
from smoldata_tui.trace.build import TraceBuilder

from .test_episode_local import run_episode, sandbox_dirs, standin_sandboxes  # noqa: F401 - a fixture
from .test_tasks_load import write_task

ROOT = Path(__file__).resolve().parent.parent


def one_call_recording(tmp_path: Path, command: str) -> Path:
    """A recorded episode whose one bash call OpenCode (or the stand-in) will run in the sandbox."""
    builder = TraceBuilder()
    builder.step_start()
    builder.bash(command, "(recorded elsewhere)\n")
    builder.step_finish("tool-calls")
    builder.step_start()
    builder.text("done")
    builder.step_finish("stop")
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(builder.dumps())
    return path


def test_a_1_gib_sparse_log_is_cut_at_the_trace_cap_recorded_and_memory_stays_bounded(tmp_path, standin_sandboxes):
    recording = one_call_recording(tmp_path, "truncate -s 1G /root/logs/agent/opencode.jsonl; echo 42 > /workdir/answer.txt")
    runs = tmp_path / "runs"
    probe = f"""
import io, sys
sys.path.insert(0, {str(ROOT)!r})
from smoldata_tui.cli import main
code = main(["run", "--task", "sales-top-region", "--model", "replay:{recording}", "--headless",
             "--save", {str(runs)!r}, "--timeout", "300"])
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("PEAK", peak, "CODE", code, file=sys.stderr)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    peak_line = [line for line in done.stderr.splitlines() if line.startswith("PEAK")]
    assert peak_line, done.stderr[-3000:]
    peak_kb = int(peak_line[-1].split()[1])
    assert peak_kb < 500_000, f"host peak memory {peak_kb} kB for a 1 GiB agent log"
    (run_dir,) = runs.iterdir()
    assert (run_dir / "run.jsonl").stat().st_size <= MAX_TRACE_BYTES
    meta = json.loads((run_dir / "run.meta.json").read_text())
    caps = {cap["cap"]: cap for cap in meta["caps_hit"]}
    assert caps["agent_log"]["limit"] == MAX_TRACE_BYTES and caps["agent_log"]["seen"] >= 1 << 30
    assert "trace cap" in done.stderr  # shown in the stage log
    summary = json.loads(done.stdout.strip().splitlines()[-1])  # the headless JSON line
    assert [cap["cap"] for cap in summary["caps_hit"]] == ["agent_log"]
    from smoldata_tui.store.metadata_reader import load_metadata
    from smoldata_tui.ui.widgets.episode_panel import metadata_text

    shown = metadata_text(load_metadata(run_dir / "run.meta.json"), "run.meta.json", []).plain
    assert "agent_log: 1 GiB seen, cut at 64 MiB" in shown  # the episode tab
    assert sandbox_dirs(standin_sandboxes) == []


def test_the_timeout_bounds_staging_too(tmp_path, standin_sandboxes):
    write_task(tmp_path / "tasks", "slow-stage", files={"environment/pull_bucket.py": "import time\ntime.sleep(1000)\n"})
    recording = one_call_recording(tmp_path, "echo 42 > /workdir/answer.txt")
    started = time.monotonic()
    result, _recorder = run_episode("slow-stage", f"replay:{recording}", tmp_path / "runs", timeout=10,
                                    tasks_root=tmp_path / "tasks")  # fmt: skip
    assert time.monotonic() - started < 120  # pull_bucket.py alone may run 600 s
    assert result.status == "timeout", result.error
    assert json.loads(result.metadata_path.read_text())["status"] == "timeout"
    assert sandbox_dirs(standin_sandboxes) == []


LIVE_PROBE = """
import asyncio, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from tests.test_ui_live import live_screen, spec_for, wait_for
from smoldata_tui.ui.apps.live import LiveApp

async def main():
    app = LiveApp(spec_for(Path({recording!r}), Path({runs!r}), timeout=300))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: any(s.__class__.__name__ == "LiveScreen" for s in app.screen_stack), 60)
        await wait_for(pilot, lambda: not live_screen(app).running, 300)
        await pilot.pause(2.0)  # the timeline reads the trace to its end
        print("STATUS", live_screen(app).result.status)
        await pilot.press("q")

asyncio.run(main())
print("PEAK", next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def test_the_live_screen_on_a_1_gib_log_keeps_memory_bounded(tmp_path, standin_sandboxes):
    recording = one_call_recording(tmp_path, "truncate -s 1G /root/logs/agent/opencode.jsonl; echo 42 > /workdir/answer.txt")
    code = LIVE_PROBE.format(root=str(ROOT), recording=str(recording), runs=str(tmp_path / "runs"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("STATUS", "PEAK")))
    assert shown["STATUS"] == "finished"
    assert int(shown["PEAK"]) < 500_000, f"live screen peak memory {shown['PEAK']} kB on a 1 GiB agent log"
    assert sandbox_dirs(standin_sandboxes) == []
