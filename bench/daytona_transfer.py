"""How many bytes cross the network to follow the agent's log in a Daytona sandbox?

    python bench/daytona_transfer.py [--steps N] [--output-bytes B]

Runs the same episode twice through the real ``daytona`` SDK against the local Daytona server
(tests/daytona_local: it speaks Daytona's API and runs the real OpenCode in bubblewrap), answered
by the replay model with N bash steps that each print B bytes:

1. with smoldata-tui's follower (in-sandbox long poll, only the bytes past the last offset);
2. with a baseline follower that downloads the whole log at every poll (what a viewer that
   re-reads the file does), on the same polling schedule.

Prints the log's size, the bytes the server sent for each run (all toolbox traffic of the
sandbox: staging, agent, follow, export, grading) and for following the log alone, and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import bash_steps_recording, local_daytona_server  # noqa: E402
from smoldata_tui.sandbox.daytona import DaytonaSettings  # noqa: E402
from smoldata_tui.session import log_follower  # noqa: E402
from smoldata_tui.session.episode import Episode, EpisodeSpec  # noqa: E402
from smoldata_tui.replay.model_endpoint import open_endpoint  # noqa: E402
from smoldata_tui.tasks import default_task_root, load_task  # noqa: E402
from tests.daytona_local import LocalDaytona  # noqa: E402


class _Quiet:
    def opened(self, trace_path):
        pass

    def stage(self, name, state, elapsed_s, message=""):
        if state == "failed":
            print(f"  [{name}] failed: {message}")

    def received(self, data):
        pass


class WholeFileFollower(log_follower.LogFollower):
    """The baseline: every poll downloads the whole log and keeps what is new."""

    def _read_new(self, wait_s: float, wanted: int) -> bytes:
        if wait_s:
            time.sleep(wait_s)  # the same schedule as the long poll when idle
        try:
            data = self._sandbox.download(self._remote)
        except FileNotFoundError:
            return b""
        return data[self.offset : self.offset + wanted]


def run(server: LocalDaytona, record: Path, folder: Path, follower_class) -> tuple:
    spec = EpisodeSpec(task=load_task(default_task_root() / "sales-top-region"),
                       endpoint=open_endpoint(model=f"replay:{record}"), backend="daytona", timeout_s=600,
                       save_dir=folder, daytona=DaytonaSettings())  # fmt: skip
    original = log_follower.LogFollower
    from smoldata_tui.session import episode as episode_module

    episode_module.LogFollower = follower_class
    try:
        before = server.bytes_sent()
        started = time.monotonic()
        result = Episode(spec, _Quiet()).run()
        elapsed = time.monotonic() - started
    finally:
        episode_module.LogFollower = original
    sent = server.bytes_sent() - before
    log_size = result.trace_path.stat().st_size if result.trace_path.exists() else 0
    return result, sent, elapsed, log_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--output-bytes", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smoldata-transfer-") as folder:
        folder = Path(folder)
        lines = ("x" * 99 + "\n") * (args.output_bytes // 100 + 1)
        record = bash_steps_recording(folder, args.steps, f"yes {'x' * 99} | head -c {args.output_bytes}",
                                      lines[: args.output_bytes])
        with local_daytona_server(folder) as server:
            ours, ours_sent, ours_s, log_size = run(server, record, folder / "ours", log_follower.LogFollower)
            base, base_sent, base_s, _ = run(server, record, folder / "baseline", WholeFileFollower)
    for label, result in (("smoldata-tui", ours), ("baseline", base)):
        if result.error is not None or result.grade is None:
            print(f"{label} run failed: {result.error}")
            return 1
    transfer = ours.metadata.sandbox["transfer"]
    print(f"episode: {args.steps} bash steps x {args.output_bytes} B output; status {ours.status}, "
          f"env_reward {ours.grade.env_reward:g}; agent log {log_size:,} B")  # fmt: skip
    print(f"following the log (smoldata-tui): {transfer['wire_bytes']:,} B of command output for "
          f"{transfer['log_bytes']:,} B of log = {transfer['wire_bytes'] / log_size:.2f}x the log (base64 is 1.33x)")  # fmt: skip
    print(f"all toolbox traffic, smoldata-tui: {ours_sent:,} B in {ours_s:.1f} s ({ours_sent / log_size:.2f}x the log)")
    print(f"all toolbox traffic, baseline (whole log every poll): {base_sent:,} B in {base_s:.1f} s "
          f"({base_sent / log_size:.2f}x the log)")  # fmt: skip
    print(f"ratio baseline / smoldata-tui: {base_sent / ours_sent:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
