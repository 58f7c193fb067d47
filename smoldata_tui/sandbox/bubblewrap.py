"""Talking to bubblewrap: finding ``bwrap``, checking once that it can make namespaces here, and
building its command lines.

Options go to bwrap through ``--args FD`` (a memfd), not argv: environment values such as API keys
would otherwise be readable in the host's process list by every user.
"""

from __future__ import annotations

import functools
import json
import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping

from smoldata_tui.sandbox.errors import BubblewrapMissing, NamespacesUnavailable, SandboxError

# What every sandboxed process starts from (bwrap's --clearenv drops the host's environment, so host
# secrets such as HF_TOKEN or DAYTONA_API_KEY never reach the agent).
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
}
# Same for every process of the sandbox: no capabilities (uid 0 inside cannot remount the read-only
# binds or make devices), separate IPC and hostname.
_COMMON = ["--cap-drop", "ALL", "--unshare-ipc", "--unshare-uts", "--clearenv"]
# Only the keeper has bwrap's own ``--die-with-parent``; a command that joins the sandbox dies with
# the keeper's namespace instead. With ``--pidns``, bwrap (0.8.0, tested here; 0.11.1's source is the
# same) forks the command from an intermediate process that exits at once, and ``--die-with-parent`` is set in
# the command during its setup: when that exit comes after the setup (a loaded machine), the kernel
# SIGKILLs the command it was meant to protect (exit 137, at any point of its run).
_KEEPER_ONLY = ["--die-with-parent"]
_PDEATHSIG_TOOL = "setpriv"  # util-linux: sets PR_SET_PDEATHSIG on itself, then execs its command
_PROBE_TIMEOUT_S = 20
_NAMESPACE_HINT = (
    "Unprivileged user namespaces may be disabled: on Debian `sysctl -w kernel.unprivileged_userns_clone=1`; "
    "on Ubuntu 23.10+ `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile "
    "for bwrap); `sysctl user.max_user_namespaces` must be above 0. Inside a container (Docker, Podman) "
    "the container must allow unshare and mount (e.g. `--privileged`, or seccomp/AppArmor profiles that do)."
)
_probed: dict[str, SandboxError | None] = {}
_probe_lock = threading.Lock()


def find_bwrap(bwrap: str | None = None) -> str:
    """The absolute path of the bwrap executable, or :class:`BubblewrapMissing`."""
    name = bwrap or "bwrap"
    found = shutil.which(name)
    if found is None:
        raise BubblewrapMissing(name)
    return os.path.abspath(found)


def ensure_usable(bwrap: str) -> None:
    """Run a trivial sandbox once per bwrap binary (the answer is cached for the process) and raise
    the reason it cannot work here, if any."""
    with _probe_lock:
        if bwrap not in _probed:
            _probed[bwrap] = _probe(bwrap)
        failure = _probed[bwrap]
    if failure is not None:
        raise failure


def _probe(bwrap: str) -> SandboxError | None:
    argv = [bwrap, "--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid", *_COMMON,
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, env=BASE_ENV)
    except FileNotFoundError:
        return BubblewrapMissing(bwrap)
    except PermissionError as error:
        return SandboxError(f"cannot run bubblewrap ({bwrap}): {error}")
    except subprocess.TimeoutExpired:
        return SandboxError(f"bubblewrap ({bwrap}) did not finish a trivial sandbox in {_PROBE_TIMEOUT_S} s")
    return None if done.returncode == 0 else failure_from_stderr(done.stderr)


def failure_from_stderr(stderr: str) -> SandboxError:
    """The error for a bwrap that failed before running the command, from what it printed."""
    detail = " ".join(stderr.split()) or "no message"
    lowered = detail.lower()
    if any(word in lowered for word in ("namespace", "uid map", "gid map", "permission denied", "not permitted")):
        return NamespacesUnavailable(f"bubblewrap cannot create a sandbox here ({detail}). {_NAMESPACE_HINT}")
    return SandboxError(f"bubblewrap cannot create a sandbox here: {detail}")


def args_fd(options: list[str]) -> int:
    """A memfd holding ``options`` NUL-separated, positioned at 0, for ``bwrap --args FD``."""
    if any("\0" in option for option in options):
        raise ValueError("sandbox options and environment values cannot contain NUL characters")
    fd = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    data = b"".join(option.encode() + b"\0" for option in options)
    while data:
        data = data[os.write(fd, data) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def env_options(env: Mapping[str, str]) -> list[str]:
    options: list[str] = []
    for name, value in env.items():
        if not name or "=" in name:
            raise ValueError(f"invalid environment variable name: {name!r}")
        options += ["--setenv", name, str(value)]
    return options


def keeper_options(layout_args: list[str], *, hostname: str, info_fd: int) -> list[str]:
    """The sandbox's first bwrap: it creates the user and PID namespaces every command joins."""
    return [*layout_args, "--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid", "--as-pid-1",
            *_COMMON, *_KEEPER_ONLY, "--hostname", hostname, "--info-fd", str(info_fd), *env_options(BASE_ENV)]  # fmt: skip


def command_options(
    layout_args: list[str],
    *,
    userns_fd: int,
    pidns_fd: int,
    hostname: str,
    env: Mapping[str, str],
    cwd: str,
    own_pid_namespace: bool,
    info_fd: int | None = None,
) -> list[str]:
    """A command entering the sandbox: it joins the keeper's namespaces. With ``own_pid_namespace``
    it gets a PID namespace nested in the sandbox's, so killing its init ends all it started.
    Without ``--die-with-parent`` (see ``_KEEPER_ONLY``): if we die, the keeper does, and the kernel
    ends every process of its namespace, this command with them; its bwrap on the host dies with us
    through :func:`monitor_prefix`."""
    options = [*layout_args, "--userns", str(userns_fd), "--pidns", str(pidns_fd), *_COMMON, "--hostname", hostname]
    if own_pid_namespace:
        options.append("--unshare-pid")
    if info_fd is not None:
        options += ["--info-fd", str(info_fd)]
    return [*options, *env_options(env), "--chdir", cwd]


@functools.cache
def monitor_prefix() -> tuple[str, ...]:
    """What a joining command's argv starts with, so that its bwrap (the host process that waits for
    the command) still dies with us: ``setpriv --pdeathsig KILL``, which survives bwrap's exec and is
    not inherited by bwrap's children, so the race above stays closed. A background job's bwrap
    needs it: its job's init is the keeper's child, not its own, so once the namespace is gone it would
    wait forever for a status nobody sends. Empty where util-linux's setpriv is missing or refuses
    ``--pdeathsig`` (an older one: 2.38.1 here takes it). That bwrap is left sleeping after a SIGKILL of ours (``kill()`` and
    interpreter exit still end it) then, and also where the kernel drops the signal at bwrap's exec
    (a setuid bwrap; SELinux or a confining AppArmor profile changing its context), or when we die
    within the millisecond between setpriv's fork and its ``prctl``."""
    found = shutil.which(_PDEATHSIG_TOOL)
    if found is None:
        return ()
    prefix = (found, "--pdeathsig", "KILL")
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=_PROBE_TIMEOUT_S, env=BASE_ENV)
        works = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        works = False
    return prefix if works else ()


def read_info(fd: int, timeout_s: float) -> dict | None:
    """The JSON bwrap writes to ``--info-fd`` once the sandboxed child exists (``child-pid`` is its
    host pid); ``None`` when bwrap closed it without writing (it failed). Closes ``fd``."""
    data = b""
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise SandboxError(f"bubblewrap did not report its sandbox within {timeout_s:g} s")
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return json.loads(data) if data.strip() else None
