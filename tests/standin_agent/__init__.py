"""The stand-in OpenCode (``agent.py``) as the single executable file ``--opencode-bin`` takes.

A local sandbox binds one file as the agent's binary and a Daytona sandbox gets one file
uploaded, so the program and the requests recorded from OpenCode 1.18.31 go into one script.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smoldata_tui.opencode.plugin_deps import COPIED_FILES, DONE_MARKER

HERE = Path(__file__).parent
RECORDED_REQUESTS = HERE / "opencode-1.18.31-requests.json"
_PLACEHOLDER = "RECORDED: dict = {}"


def build_standin(cache: Path) -> Path:
    """Lay the stand-in out as OpenCode 1.18.31 installed in the OpenCode cache ``cache`` (what
    ``$XDG_CACHE_HOME/smoldata-tui/opencode`` holds): ``<cache>/1.18.31/bin/opencode``, mode 755.

    Its plugin folder is there too, empty but complete: the stand-in loads no plugin, and an
    episode would otherwise install OpenCode's plugin package from npm for it."""
    source = (HERE / "agent.py").read_text(encoding="utf-8")
    recorded = json.loads(RECORDED_REQUESTS.read_text(encoding="utf-8"))
    assert source.count(_PLACEHOLDER) == 1, "agent.py lost the line the recorded requests replace"
    script = "#!/usr/bin/env python3\n" + source.replace(_PLACEHOLDER, f"RECORDED: dict = {recorded!r}")
    version = recorded["version"]
    folder = cache / version / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "opencode"
    temporary = folder / ".opencode.tmp"
    temporary.write_text(script, encoding="utf-8")
    temporary.chmod(0o755)
    os.replace(temporary, path)
    plugin = cache / f"plugin-{version}"
    (plugin / "node_modules").mkdir(parents=True, exist_ok=True)
    for name in COPIED_FILES:
        (plugin / name).write_text("{}\n" if name.endswith(".json") else "node_modules\n")
    (plugin / DONE_MARKER).write_text(version)
    return path


@pytest.fixture(scope="session")
def standin_opencode(tmp_path_factory) -> Path:
    """The stand-in OpenCode's path, for ``--opencode-bin`` / ``EpisodeSpec(opencode_bin=...)``; its
    ``parents[2]`` is an OpenCode cache that holds it as 1.18.31 (for ``XDG_CACHE_HOME`` links and
    the local Daytona server's ``opencode_bin_dir``)."""
    return build_standin(tmp_path_factory.mktemp("standin") / "opencode")
