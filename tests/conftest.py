from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_traces"


def run_cli(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real ``smoldata-tui`` entry point in a fresh interpreter."""
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1"}
    env.pop("SMOLDATA_TUI_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "smoldata_tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env=env,
    )


@pytest.fixture
def cli():
    return run_cli
