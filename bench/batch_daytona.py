"""A batch on Daytona: 32 episodes at concurrency 16 against the local Daytona server.

    python bench/batch_daytona.py [--episodes N] [--concurrency C] [--steps S] [--output-bytes B]

Runs :class:`Batch` (what ``smoldata-tui run --attempts N --backend daytona`` runs) through the
real ``daytona`` SDK against tests/daytona_local (it speaks Daytona's API and runs the real
OpenCode in bubblewrap), each episode answered by the replay model with S bash steps printing B
bytes each. Prints the wall time, how many sandboxes were alive at most at once and at the end
(every one must be deleted), how many SDK clients the batch opened, and the bytes on the wire:
the log-follow command output against the log's size per episode (it must stay a constant factor
of the log: base64 is 1.33x), and all the server sent.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import bash_steps_recording, local_daytona_server  # noqa: E402
from smoldata_tui.sandbox.daytona import DaytonaSettings  # noqa: E402
from smoldata_tui.sandbox.daytona import backend as daytona_backend  # noqa: E402
from smoldata_tui.session.batch import Batch, BatchPlan  # noqa: E402
from smoldata_tui.session.episode import EpisodeSpec  # noqa: E402
from smoldata_tui.replay.model_endpoint import open_endpoint  # noqa: E402
from smoldata_tui.tasks import default_task_root, load_task  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--output-bytes", type=int, default=4000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smoldata-batch-daytona-") as folder:
        folder = Path(folder)
        lines = ("x" * 99 + "\n") * (options.output_bytes // 100 + 1)
        record = bash_steps_recording(folder, options.steps, f"yes {'x' * 99} | head -c {options.output_bytes}",
                                      lines[: options.output_bytes])  # fmt: skip
        task = load_task(default_task_root() / "sales-top-region")
        with local_daytona_server(folder) as server:
            clients = {"opened": 0}
            original = daytona_backend._new_client

            async def counted():
                clients["opened"] += 1
                return await original()

            daytona_backend._new_client = counted

            def endpoint():
                return open_endpoint(model=f"replay:{record}")

            template = EpisodeSpec(task=task, endpoint=endpoint(), backend="daytona", timeout_s=900, save_dir=folder,
                                   daytona=DaytonaSettings(), capture=False)  # fmt: skip
            template.endpoint.close()
            plan = BatchPlan([task], attempts=options.episodes, concurrency=options.concurrency, template=template,
                             open_endpoint=endpoint)  # fmt: skip
            batch = Batch(plan)
            peak, done = [0], threading.Event()

            def watch():
                while not done.wait(0.5):
                    peak[0] = max(peak[0], len(server.sandbox_ids()))

            threading.Thread(target=watch, daemon=True).start()
            before = server.bytes_sent()
            started = time.monotonic()
            report = batch.run()
            elapsed = time.monotonic() - started
            done.set()
            sent = server.bytes_sent() - before
            left = server.sandbox_ids()
            creates = sum(1 for method, path, _ in server.requests if method == "POST" and path == "/api/sandbox")
        wire = log = 0
        for row in json.loads((batch.folder / "batch.json").read_text())["runs"]:
            if row["folder"]:
                meta = json.loads((batch.folder / row["folder"] / "run.meta.json").read_text())
                transfer = meta.get("sandbox", {}).get("transfer", {})
                wire += transfer.get("wire_bytes", 0)
                log += transfer.get("log_bytes", 0)
    totals = report["tasks"][task.name]
    print(f"{options.episodes} episodes at concurrency {options.concurrency}: {elapsed:.1f} s wall; graded "
          f"{totals['graded']}, passed {totals['passed']}, failed {len(report['failed'])}")  # fmt: skip
    for row in report["failed"][:5]:
        print(f"  failed: {row['task']}-{row['attempt']}: {row['why']}")
    print(f"sandboxes: {creates} create requests, at most {peak[0]} alive at once (sampled), {len(left)} left at the end")
    print(f"Daytona SDK clients opened: {clients['opened']} (one shared while sandboxes live)")
    if log:
        print(f"following the logs: {wire:,} B of command output for {log:,} B of log = {wire / log:.2f}x the log "
              f"(base64 is 1.33x)")  # fmt: skip
    print(f"all the server sent: {sent:,} B ({sent / options.episodes:,.0f} B per episode)")
    return 0 if not left and not report["failed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
