"""Shared by the fleet benchmarks: a generated fleet of episodes, and CPU seconds of a child."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import DATA, ROOT


def generated_fleet(name: str, count: int, seed: int) -> Path:
    """``count`` episodes (smoldata_tui.fleet.build) in bench/.data/NAME_COUNT, generated once."""
    folder = DATA / f"{name}_{count}"
    done = folder / ".complete"
    if not done.exists():
        code = (
            "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
            "from smoldata_tui.fleet.build import write_fleet;"
            "write_fleet(Path(sys.argv[2]), int(sys.argv[3]), seed=int(sys.argv[4]))"
        )
        subprocess.run([sys.executable, "-c", code, str(ROOT), str(folder), str(count), str(seed)], check=True)
        age_files(folder)
        done.touch()
    return folder


def saved_fleet(count: int) -> Path:
    """``count`` saved episodes in bench/.data/saved_COUNT, made once: the repository's recorded
    episodes (sample_traces/real: real OpenCode runs, each with its run.meta.json and sidecars, the
    config disabling tools as the environment's does) and its adversarial traces, in turn, one
    folder each, their files dated an hour back as a folder of past episodes is."""
    folder = DATA / f"saved_{count}"
    done = folder / ".complete"
    if done.exists():
        return folder
    samples = ROOT / "sample_traces"
    episodes = [p for p in sorted((samples / "real").glob("*.jsonl")) if not p.name.endswith(".proxy.jsonl")]
    episodes += sorted(samples.glob("*.jsonl"))
    past = time.time_ns() - 3600 * 10**9
    for number in range(count):
        trace = episodes[number % len(episodes)]
        target = folder / f"{number:05d}-{trace.stem}"
        target.mkdir(parents=True, exist_ok=True)
        stem = trace.name[: -len(".jsonl")]
        for source in trace.parent.glob(stem + ".*"):
            name = "run" + source.name[len(stem):]
            if name == "run.proxy.jsonl" or source.name.endswith(".proxy.jsonl"):
                name = "run.proxy.jsonl"
            shutil.copyfile(source, target / name)
            os.utime(target / name, ns=(past, past))
    done.touch()
    return folder


def age_files(folder: Path, seconds: int = 3600) -> None:
    """Date every file under ``folder`` ``seconds`` back (check keeps no result of a file changed
    within the last seconds: a generated fleet is otherwise never cached on its first run)."""
    past = time.time_ns() - seconds * 10**9
    for path in folder.rglob("*"):
        os.utime(path, ns=(past, past))


def children_cpu(before: os.times_result, after: os.times_result) -> float:
    """user + sys of the children waited for between two ``os.times()``."""
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def cpu_seconds(argv: list[str], env: dict[str, str] | None = None, before=None) -> float:
    """user + sys of one run of ``argv`` and every child it waited for."""
    if before is not None:
        before()
    started = os.times()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, check=False,
                   env={**os.environ, **(env or {})})  # fmt: skip
    return children_cpu(started, os.times())
