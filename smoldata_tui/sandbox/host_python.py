"""The host's Python inside a local sandbox, for opencode_env's logging proxy.

opencode_env starts its proxy with ``python interception.py`` (FastAPI, uvicorn, httpx) and first
runs ``pip install`` for them; the environment's image has such a Python, a local sandbox only has
the host's read-only system directories. This binds the interpreter smoldata-tui runs on (which
has those packages: they come with openenv and daytona) read-only at its own path, and puts
``python``/``python3`` first on PATH through a small folder of wrapper scripts, so the proxy's
install finds everything satisfied and the proxy runs.

The wrappers ``exec`` the interpreter by its own path rather than link to it: Python finds its
virtual environment from the path it was started by (``pyvenv.cfg`` beside or above it), so a
link elsewhere to a venv's ``python`` starts the base interpreter without the venv's packages.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from pathlib import Path

SHIM_IN_SANDBOX = "/opt/smoldata-python/bin"
_SYSTEM_PREFIXES = ("/usr/", "/bin/", "/lib", "/opt/", "/etc/")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def python_shim_dir(executable: str | None = None) -> Path:
    """A folder with ``python`` and ``python3`` wrappers that run ``executable`` (default: ours)."""
    executable = executable or sys.executable
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(executable.encode()).hexdigest()[:12]  # one folder per interpreter, reused
    folder = Path(cache, "smoldata-tui", "python-shim", f"{os.getuid()}-{digest}")
    folder.mkdir(parents=True, exist_ok=True)
    script = f'#!/bin/sh\nexec {shlex.quote(executable)} "$@"\n'
    for name in ("python", "python3"):
        wrapper = folder / name
        if wrapper.is_symlink() or not wrapper.is_file() or wrapper.read_text() != script:
            tmp = folder / f".{name}.{os.getpid()}"
            tmp.write_text(script)
            tmp.chmod(0o755)
            tmp.replace(wrapper)
    return folder


def host_python_binds() -> list[tuple[Path, str]]:
    """Read-only binds that make the host interpreter runnable in the sandbox as ``python``."""
    binds: list[tuple[Path, str]] = [(python_shim_dir(), SHIM_IN_SANDBOX)]
    for prefix in sorted({sys.base_prefix, sys.prefix}):
        if not (prefix + "/").startswith(_SYSTEM_PREFIXES):  # system prefixes are bound already
            binds.append((Path(prefix), prefix))
    return binds


def host_python_path(base: str = DEFAULT_PATH) -> str:
    """PATH for the sandbox's commands: the shim first (and the interpreter's own bin)."""
    return ":".join([SHIM_IN_SANDBOX, os.path.dirname(sys.executable), base])
