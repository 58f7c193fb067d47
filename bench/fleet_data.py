"""Shared by the fleet benchmarks: a generated fleet of episodes, and CPU seconds of a child."""

from __future__ import annotations

import os
import subprocess
import sys
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
        done.touch()
    return folder


def children_cpu(before: os.times_result, after: os.times_result) -> float:
    """user + sys of the children waited for between two ``os.times()``."""
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)
