"""OpenCode's own plugin package, installed once per version instead of once per episode.

At every start OpenCode makes sure its config folder (``~/.config/opencode``) holds
``@opencode-ai/plugin`` at its own version: in a fresh home (every episode's) it writes a
``package.json`` and runs an npm install there (27 packages, 64 MB, from the npm registry), which
kept OpenCode busy for about 10 s of CPU in every episode it ran here. Its home in a sandbox of the
environment starts as empty, so OpenCode does the same there.

Here the same install is made once per OpenCode version, into the OpenCode cache
(``<cache>/plugin-<version>``, ``--ignore-scripts``), and a local sandbox gets it as OpenCode would
have left it: its ``node_modules`` bound read-only (the agent cannot change what later episodes
load) and copies of ``package.json``, ``package-lock.json`` and ``.gitignore``. OpenCode finds its
dependency satisfied and installs nothing. Without npm, or offline, nothing is prepared and OpenCode
installs the package itself, as before.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.opencode.config import config_path
from smoldata_tui.trace.text import clip
from smoldata_tui.opencode.install import VERSION_SHAPE, OpenCodeInstallError, install_lock, npm_install, opencode_cache_dir

PLUGIN_PACKAGE = "@opencode-ai/plugin"
#: What OpenCode 1.18.31 and 1.18.33 write beside the install (its .gitignore) and what npm leaves to copy.
GITIGNORE = "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore"
COPIED_FILES = ("package.json", "package-lock.json", ".gitignore")
DONE_MARKER = ".complete"
NPM_TIMEOUT_S = 120.0  # 4 s here; past this, npm is waiting on a registry it cannot reach
RETRY_AFTER_S = 3600.0  # after a failure, episodes go on without asking npm again for an hour

Progress = Callable[[str], None]


def plugin_deps_dir(version: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    return opencode_cache_dir(cache_dir) / f"plugin-{version}"


def ensure_plugin_deps(version: str, *, cache_dir: str | os.PathLike[str] | None = None,
                       progress: Progress | None = None) -> Path | None:  # fmt: skip
    """The folder holding ``@opencode-ai/plugin`` ``version`` as OpenCode installs it, made on
    first use; None (with a note) when it cannot be made: OpenCode then installs it itself."""
    say = progress or (lambda line: None)
    if not VERSION_SHAPE.fullmatch(version):  # what a given --opencode-bin said it is: not a path
        say(f"OpenCode says its version is {clip(version, 60)!r}: OpenCode will install {PLUGIN_PACKAGE} itself")
        return None
    target = plugin_deps_dir(version, cache_dir)
    if (target / DONE_MARKER).is_file():
        return target
    npm = shutil.which("npm")
    if npm is None:
        say(f"no npm: OpenCode will install {PLUGIN_PACKAGE} itself, in the sandbox")
        return None
    root = target.parent
    failed = root / f".plugin-{version}.failed"  # an offline machine must not wait on npm every episode
    if _recent(failed):
        say(f"{PLUGIN_PACKAGE}@{version} could not be installed less than an hour ago "
            f"({_first_line(failed)}): OpenCode will install it itself, in the sandbox")  # fmt: skip
        return None
    try:
        root.mkdir(parents=True, exist_ok=True)
        with install_lock(root / f".plugin-{version}.lock", say):
            if (target / DONE_MARKER).is_file():  # made by another process while we waited
                return target
            staging = Path(tempfile.mkdtemp(prefix=f".plugin-{version}.partial-", dir=root))
            try:
                say(f"installing {PLUGIN_PACKAGE}@{version} once (OpenCode would in every episode)…")
                npm_install(npm, f"{PLUGIN_PACKAGE}@{version}", staging, say,
                             extra=("--save-exact", "--ignore-scripts"), timeout_s=NPM_TIMEOUT_S)  # fmt: skip
                (staging / ".gitignore").write_text(GITIGNORE)
                (staging / DONE_MARKER).write_text(version)
                shutil.rmtree(target, ignore_errors=True)  # a partial one, from before the marker existed
                os.rename(staging, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except (OSError, OpenCodeInstallError) as exc:
        reason = clip(" ".join(str(exc).split()), 300)
        try:
            failed.write_text(reason + "\n")
        except OSError:
            pass
        say(f"could not install {PLUGIN_PACKAGE}@{version} ({reason}): OpenCode will install it itself, in the sandbox")
        return None
    try:
        failed.unlink(missing_ok=True)
    except OSError:
        pass  # only a note for later episodes: it ages out within the hour
    return target


def _recent(marker: Path) -> bool:
    try:
        return time.time() - marker.stat().st_mtime < RETRY_AFTER_S
    except OSError:
        return False


def _first_line(marker: Path) -> str:
    try:
        return marker.read_text(errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return "no reason kept"


def config_folders(home: str) -> tuple[str, ...]:
    """The folders OpenCode installs its plugin package into, in a home where opencode_env's layout
    puts the binary: ``~/.config/opencode`` and ``~/.opencode`` (it reads both)."""
    return (posixpath.dirname(config_path(home)), f"{home}/.opencode")


def home_binds(deps: Path, home: str) -> list[tuple[Path, str]]:
    """Read-only binds that give each of those folders the installed packages."""
    return [(deps / "node_modules", f"{folder}/node_modules") for folder in config_folders(home)]


def write_home_files(sandbox, deps: Path, home: str) -> None:
    """Write the small files OpenCode checks beside ``node_modules`` into a new sandbox's home."""
    texts = {name: (deps / name).read_text() for name in COPIED_FILES}
    for folder in config_folders(home):
        for name, text in texts.items():
            sandbox.write_text(f"{folder}/{name}", text)
