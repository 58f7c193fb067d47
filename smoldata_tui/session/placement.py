"""Where an episode runs: a sandbox on the chosen backend, with OpenCode where the agent command
finds it. Local sandboxes get the host's cached binary bound read-only before they start; a Daytona
sandbox is created first, then keeps the OpenCode its image has (when it is the wanted version) or
receives the host's cached binary by upload.

Returns the name the agent command uses for the binary: ``opencode`` (on PATH through
``$HOME/.opencode/bin``, as opencode_env runs it) or an absolute path.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.sandbox.protocol import exec_repeatable
from smoldata_tui.opencode.install import resolve_opencode
from smoldata_tui.opencode.plugin_deps import home_binds, write_home_files

HOME = "/root"  # the environment's sandbox_home
OPENCODE_IN_HOME = f"{HOME}/.opencode/bin/opencode"
Progress = Callable[[str], None]


def create_local(binary: Path, *, timeout_s: float, metadata: dict[str, str],
                 plugin_deps: Path | None = None) -> tuple[object, str]:  # fmt: skip
    """``plugin_deps``: OpenCode's plugin package installed once (opencode/plugin_deps.py), given to
    the home's config folder so that OpenCode does not install it again in this sandbox."""
    from smoldata_tui.sandbox import LocalSandboxBackend

    binds = home_binds(plugin_deps, HOME) if plugin_deps is not None else []
    if binary.name == "opencode":
        # Only bin/ is bound (read-only): OpenCode writes its own files into ~/.opencode.
        backend = LocalSandboxBackend(binds=[(binary.parent, f"{HOME}/.opencode/bin"), *binds])
        opencode = "opencode"
    else:
        backend = LocalSandboxBackend(binds=[(binary.parent, "/opt/opencode"), *binds])
        opencode = f"/opt/opencode/{binary.name}"
    sandbox = backend.create(timeout_s=timeout_s + 600, metadata=metadata)
    if plugin_deps is not None:
        try:
            write_home_files(sandbox, plugin_deps, HOME)
        except BaseException:
            sandbox.kill()
            raise
    return sandbox, opencode


def create_local_like_image(binary: Path, *, timeout_s: float, metadata: dict[str, str]):
    """A local sandbox as opencode_env expects the environment's image: OpenCode at
    ``/root/.opencode/bin/opencode``, a ``python`` with the proxy's packages, and ``/root/workdir``
    an empty folder for the environment's setup shell to replace with a link."""
    from smoldata_tui.sandbox import LocalSandboxBackend
    from smoldata_tui.sandbox.host_python import host_python_binds, host_python_path

    if binary.name != "opencode":
        raise RuntimeError(f"opencode_env runs {OPENCODE_IN_HOME}: --opencode-bin must name a file called opencode")
    backend = LocalSandboxBackend(binds=[(binary.parent, f"{HOME}/.opencode/bin"), *host_python_binds()],
                                  link_workdir=False)  # fmt: skip
    return backend.create(timeout_s=timeout_s, metadata=metadata, envs={"PATH": host_python_path()})


def sandbox_record(sandbox) -> dict[str, object]:
    """Where the episode ran, for ``run.meta.json``: the id, and a remote sandbox's name, source and
    the resources it got (as Daytona reported them)."""
    record: dict[str, object] = {"id": sandbox.sandbox_id}
    settings = getattr(sandbox, "_settings", None)
    if settings is not None:
        record.update(name=sandbox.name, source=settings.source)
    resources = getattr(sandbox, "resources", None)
    if resources:
        record["resources"] = resources
    return record


def create_daytona(settings, *, timeout_s: float, metadata: dict[str, str], progress: Progress,
                   cancel: threading.Event):  # fmt: skip
    from smoldata_tui.sandbox.daytona import DaytonaSandboxBackend

    backend = DaytonaSandboxBackend(settings)
    return backend.create(timeout_s=timeout_s, metadata=metadata, progress=progress, cancel=cancel)


def place_opencode(sandbox, *, version: str, opencode_bin: str | None, progress: Progress) -> tuple[str, str | None]:
    """Make OpenCode ``version`` runnable in a remote sandbox; skip the upload when the image has it.
    Returns how the agent command names the binary and what its ``--version`` said there."""
    found = _opencode_in(sandbox)
    if found is not None and found[1] == version:
        progress(f"OpenCode {version} is in the image ({found[0]}): nothing to install")
        return ("opencode" if found[0] == OPENCODE_IN_HOME else found[0]), version
    if found is not None:
        progress(f"the image has OpenCode {found[1] or '(unknown version)'} at {found[0]}; installing {version}")
    binary = resolve_opencode(opencode_bin, version, progress=progress)
    size_mb = binary.stat().st_size / 1e6
    progress(f"uploading OpenCode {version} ({size_mb:.0f} MB) to {OPENCODE_IN_HOME}")
    sandbox.upload_file(binary, OPENCODE_IN_HOME)
    result = exec_repeatable(sandbox, f"chmod 755 {OPENCODE_IN_HOME} && {OPENCODE_IN_HOME} --version", timeout=120)
    if result.exit_code != 0:
        raise RuntimeError(f"the uploaded OpenCode does not run in the sandbox: {(result.stderr or result.stdout).strip()[:300]}")
    installed = result.stdout.strip().splitlines()[-1:] or [""]
    progress(f"OpenCode {installed[0]} installed")
    return "opencode", installed[0] or None


def _opencode_in(sandbox) -> tuple[str, str] | None:
    """(path, version) of the OpenCode the sandbox has, or None."""
    script = (
        f"p={shlex.quote(OPENCODE_IN_HOME)}; [ -x \"$p\" ] || p=$(command -v opencode 2>/dev/null); "
        '[ -n "$p" ] && [ -x "$p" ] || exit 1; echo "$p"; "$p" --version 2>/dev/null | head -n 1'
    )
    result = exec_repeatable(sandbox, script, envs={"HOME": HOME}, timeout=120)
    lines = result.stdout.strip().splitlines()
    if result.exit_code != 0 or not lines:
        return None
    return lines[0].strip(), (lines[1].strip() if len(lines) > 1 else "")
