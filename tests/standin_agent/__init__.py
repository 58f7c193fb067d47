"""The stand-in OpenCode (``agent.py``, ``tools.py`` and the requests recorded from OpenCode 1.18.31)
as the single executable file ``--opencode-bin`` takes: a zip application (``zipapp``), since a
local sandbox binds one file as the agent's binary and a Daytona sandbox gets one file uploaded.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipapp
from pathlib import Path

import pytest

from smoldata_tui.opencode.plugin_deps import COPIED_FILES, DONE_MARKER

HERE = Path(__file__).parent
SOURCES = ("agent.py", "tools.py", "opencode-1.18.31-requests.json")


def build_standin(cache: Path) -> Path:
    """Lay the stand-in out as OpenCode 1.18.31 installed in the OpenCode cache ``cache`` (what
    ``$XDG_CACHE_HOME/smoldata-tui/opencode`` holds): ``<cache>/1.18.31/bin/opencode``, mode 755.

    Its plugin folder is there too, empty but complete: the stand-in loads no plugin, and an
    episode would otherwise install OpenCode's plugin package from npm for it."""
    version = json.loads((HERE / SOURCES[-1]).read_text(encoding="utf-8"))["version"]
    folder = cache / version / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "opencode"
    with tempfile.TemporaryDirectory(dir=folder) as staging:
        for name in SOURCES:
            shutil.copy(HERE / name, Path(staging, name))
        packed = folder / ".opencode.tmp"
        zipapp.create_archive(staging, packed, interpreter="/usr/bin/env python3", main="agent:cli")
    packed.chmod(0o755)
    os.replace(packed, path)
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
