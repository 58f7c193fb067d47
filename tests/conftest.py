from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .standin_agent import standin_opencode  # noqa: F401 - a fixture every module may ask for

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


#: Fixtures of tests that start the real OpenCode or its stand-in (``sandboxes``: a local episode's
#: private cache) or the local Daytona server: a test asking for one is slow.
SLOW_FIXTURES = frozenset({"opencode_bin", "standin_opencode", "sandboxes", "local_daytona"})
#: Modules whose tests take seconds without asking for those fixtures: they install and run two
#: OpenCode versions, wait out the retries of an unreachable Daytona, or draw every screen in every
#: theme (the contrast sweep: minutes of CPU) or at every surface (one episode, every shape).
SLOW_MODULES = frozenset({"test_opencode_compare", "test_daytona_unreachable", "test_ui_contrast", "test_one_episode"})


def pytest_collection_modifyitems(config, items):
    """``slow`` on every test that takes seconds (most start OpenCode or the Daytona server), so
    ``-m "not slow"`` is the lane a developer runs before each commit; and the modules holding such
    tests run first (in their own order), so that with two workers the longest tests do not start
    last while the other worker has nothing left to do."""
    slow_modules = set()
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if SLOW_FIXTURES.intersection(item.fixturenames) or module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
            slow_modules.add(module)
    items.sort(key=lambda item: item.module.__name__.rsplit(".", 1)[-1] not in slow_modules)  # stable
