"""Install the OpenCode binary from npm into a per-user cache, once per version.

The environment pins OpenCode 1.18.31. npm's ``opencode-ai`` package carries a postinstall
script that picks the right platform build (AVX2 or baseline, glibc or musl) and hard-links it
to ``node_modules/opencode-ai/bin/opencode.exe``: a self-contained executable (~185 MB) that
needs neither Node.js nor npm at run time. We let npm do that choice, keep only that one file
and drop the rest of ``node_modules``::

    $XDG_CACHE_HOME/smoldata-tui/opencode/<version>/bin/opencode     (default ~/.cache/...)
    $XDG_CACHE_HOME/smoldata-tui/opencode/<version>/install.json     (what was installed, when)

An installation is built in a sibling temporary directory and renamed into place only once
the binary answers ``--version`` with the expected version, so an interrupted install (Ctrl-C,
crash) never leaves a half-installed cache. A lock file serialises two processes installing
the same version; the second one waits and then reuses the first one's result.

No Textual here; ``progress`` receives plain lines for whichever UI is showing them.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "DEFAULT_OPENCODE_VERSION",
    "NPM_PACKAGE",
    "OpenCodeInstallError",
    "binary_version",
    "checked_version",
    "ensure_opencode",
    "installed_binary",
    "opencode_cache_dir",
    "resolve_opencode",
    "run_opencode_cli",
]

DEFAULT_OPENCODE_VERSION = "1.18.31"  # the SmolDataEnvs environment's pin
NPM_PACKAGE = "opencode-ai"
NPM_TIMEOUT_S = 900.0
VERSION_TIMEOUT_S = 30.0  # the first start of a 185 MB binary on a cold disk can take a while
PROGRESS_EVERY_S = 2.0

# A version goes into a path and an npm spec: an exact version only (a dist-tag such as
# "latest" names a different version over time, so it cannot key a cache).
VERSION_SHAPE = re.compile(r"^[0-9][0-9A-Za-z.+_-]*$")

Progress = Callable[[str], None]


class OpenCodeInstallError(RuntimeError):
    """OpenCode could not be installed or found; the message says what to do about it."""


def opencode_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where installed versions live: ``cache_dir`` or ``$XDG_CACHE_HOME/smoldata-tui/opencode``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smoldata-tui" / "opencode"


def installed_binary(
    version: str = DEFAULT_OPENCODE_VERSION, *, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The path the binary of ``version`` has once installed (it may not exist yet)."""
    return opencode_cache_dir(cache_dir) / _checked_version(version) / "bin" / "opencode"


def binary_version(binary: str | os.PathLike[str], *, timeout: float = VERSION_TIMEOUT_S) -> str | None:
    """What ``<binary> --version`` prints, or None when it does not run."""
    if not os.path.isfile(binary):
        return None
    # Even `--version` creates OpenCode's config, data and cache folders under HOME: point it
    # at a throwaway one so that asking leaves the user's home untouched.
    with tempfile.TemporaryDirectory(prefix="smoldata-opencode-version-") as home:
        try:
            done = subprocess.run(
                [os.fspath(binary), "--version"],
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                env=_throwaway_home_env(home),
            )
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if lines else None


def ensure_opencode(
    version: str = DEFAULT_OPENCODE_VERSION,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> Path:
    """Return the OpenCode binary of ``version``, installing it from npm on first use."""
    say = progress or (lambda line: None)
    version = _checked_version(version)
    binary = installed_binary(version, cache_dir=cache_dir)
    # Threads of one process (a batch's episodes) check and install one at a time; flock below
    # serialises processes (and threads too, each holding its own open file).
    with _thread_lock:
        if checked_version(binary, stamp=True) != version:
            _install_locked(version, binary, cache_dir, say)
            checked_version(binary, stamp=True)
        return binary


_thread_lock = threading.Lock()
_verified: dict[Path, tuple[tuple[int, int, int], str]] = {}
_STAMP = "verified.json"  # beside bin/ in an installed version: the binary's identity when it last answered


def checked_version(binary: str | os.PathLike[str], *, stamp: bool = False) -> str | None:
    """What ``<binary> --version`` prints, asked once per file: every start of the binary costs
    about 2 s of CPU, so the answer is kept for as long as the file is the same one (inode, size,
    mtime) — in this process, and with ``stamp`` (an installed version's binary) in a
    ``verified.json`` beside ``bin/`` for the next process."""
    binary = Path(binary)
    identity = _identity(binary)
    if identity is None:
        return None
    known = _verified.get(binary)
    if known is not None and known[0] == identity:
        return known[1]
    stamp_path = binary.parent.parent / _STAMP
    if stamp:
        try:
            saved = json.loads(stamp_path.read_text(encoding="utf-8"))
            if isinstance(saved, dict) and saved.get("identity") == list(identity) and isinstance(saved.get("version"), str):
                _verified[binary] = (identity, saved["version"])
                return saved["version"]
        except (OSError, ValueError):
            pass
    version = binary_version(binary)
    if version is not None and _identity(binary) == identity:
        _verified[binary] = (identity, version)
        if stamp:
            try:
                stamp_path.write_text(json.dumps({"version": version, "identity": list(identity)}) + "\n", encoding="utf-8")
            except OSError:
                pass  # a read-only cache: asked again next time
    return version


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns)


def _install_locked(version: str, binary: Path, cache_dir, say: Progress) -> Path:
    root = opencode_cache_dir(cache_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with install_lock(root / f".{version}.lock", say):
            # Another process may have installed it while we waited for the lock.
            if binary_version(binary) == version:
                return binary
            _remove_leftovers(root, version)
            return _install(version, root, say)
    except OSError as exc:  # a read-only or full cache, npm vanishing between lookup and start...
        raise OpenCodeInstallError(f"cannot install OpenCode {version} into {root}: {exc}") from None


def resolve_opencode(
    bin: str | os.PathLike[str] | None = None,  # noqa: A002 - mirrors --opencode-bin
    version: str = DEFAULT_OPENCODE_VERSION,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> Path:
    """The binary to run: ``bin`` (``--opencode-bin``) when given, else the cached ``version``."""
    if bin is None:
        return ensure_opencode(version, cache_dir=cache_dir, progress=progress)
    given = os.fspath(bin)
    found = shutil.which(os.path.expanduser(given))
    if found is None:
        raise OpenCodeInstallError(f"--opencode-bin {given}: no such executable")
    reported = checked_version(found)
    if reported is None:
        raise OpenCodeInstallError(f"--opencode-bin {given}: `{found} --version` failed; is it OpenCode?")
    if reported != version and progress is not None:
        progress(f"note: {found} is OpenCode {reported}, not {version}; traces may differ from the environment's")
    return Path(found)


def run_opencode_cli(action: str, version: str | None = None) -> int:
    """``smoldata-tui opencode install|path``: progress on stderr, the binary's path on stdout."""
    version = version or DEFAULT_OPENCODE_VERSION
    try:
        if action == "install":
            binary = ensure_opencode(version, progress=lambda line: print(line, file=sys.stderr, flush=True))
        else:
            binary = installed_binary(version)
            if binary_version(binary) != version:
                print(
                    f"smoldata-tui opencode: OpenCode {version} is not installed "
                    f"(run `smoldata-tui opencode install --version {version}`)",
                    file=sys.stderr,
                )
                return 1
    except OpenCodeInstallError as exc:
        print(f"smoldata-tui opencode: {exc}", file=sys.stderr)
        return 1
    print(binary)
    return 0


# ---------------------------------------------------------------------------------- installing


def _checked_version(version: str) -> str:
    if not isinstance(version, str) or not VERSION_SHAPE.match(version) or ".." in version:
        raise OpenCodeInstallError(
            f"{version!r} is not an exact OpenCode version (expected e.g. {DEFAULT_OPENCODE_VERSION})"
        )
    return version


def _install(version: str, root: Path, say: Progress) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise OpenCodeInstallError(
            f"npm was not found on PATH. OpenCode is installed from npm (package {NPM_PACKAGE}): install "
            "Node.js 18 or newer, which includes npm (https://nodejs.org/, or e.g. `apt install nodejs npm`), "
            "or pass --opencode-bin with an OpenCode binary you already have."
        )
    spec = f"{NPM_PACKAGE}@{version}"
    staging = Path(tempfile.mkdtemp(prefix=f".{version}.partial-", dir=root))
    try:
        say(f"downloading {spec} from npm…")
        started = time.monotonic()
        npm_install(npm, spec, staging / "npm", say)
        binary = _take_binary(staging, version)
        size_mb = binary.stat().st_size / 1e6
        (staging / "install.json").write_text(
            json.dumps(
                {
                    "package": spec,
                    "version": version,
                    "installed_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        target = root / version
        if target.exists():  # a broken earlier install (its binary failed --version above)
            shutil.rmtree(target)
        os.rename(staging, target)  # atomic: readers see no install or a whole one
        binary = target / "bin" / "opencode"
        say(f"installed OpenCode {version} ({size_mb:.0f} MB) in {time.monotonic() - started:.1f} s: {binary}")
        return binary
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already after a successful rename


def npm_install(npm: str, spec: str, prefix: Path, say: Progress, extra: tuple[str, ...] = (),
                 timeout_s: float = NPM_TIMEOUT_S) -> None:  # fmt: skip
    command = [npm, "install", "--prefix", str(prefix), spec, "--no-audit", "--no-fund", "--loglevel=error", *extra]
    # npm gets its own process group so that we, not the terminal, decide when it dies: on
    # Ctrl-C, a timeout or any error we kill the whole group (npm runs the postinstall in a child).
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
        try:
            _wait_with_progress(proc, prefix, say, timeout_s)
        except BaseException:
            _kill_group(proc)
            raise
        if proc.returncode != 0:
            errors.seek(0)
            message = errors.read().decode(errors="replace")
            raise OpenCodeInstallError(_explain_npm_failure(spec, proc.returncode, message))


def _wait_with_progress(proc: subprocess.Popen, prefix: Path, say: Progress, timeout_s: float = NPM_TIMEOUT_S) -> None:
    started = time.monotonic()
    while True:
        try:
            proc.wait(timeout=PROGRESS_EVERY_S)
            return
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - started
            if elapsed > timeout_s:
                raise OpenCodeInstallError(f"npm install did not finish within {timeout_s:.0f} s") from None
            # npm prints nothing while it works; the growing node_modules is the only sign of life.
            unpacked = _tree_size(prefix)
            doing = f"{unpacked / 1e6:.0f} MB unpacked" if unpacked > 1e6 else "downloading"
            say(f"  … {doing} ({elapsed:.0f} s)")


def _explain_npm_failure(spec: str, returncode: int, stderr: str) -> str:
    if "ETARGET" in stderr or "No matching version" in stderr:
        return f"{spec} is not on npm (list the versions with `npm view {NPM_PACKAGE} versions`)"
    if "E404" in stderr:
        return f"{spec} was not found on the npm registry"
    if any(code in stderr for code in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET")):
        return f"could not download {spec}: the npm registry is unreachable (network or proxy settings?)"
    tail = " / ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
    return f"npm install {spec} failed (exit {returncode}): {tail or 'no message'}"


def _take_binary(staging: Path, version: str) -> Path:
    """Move the platform binary npm chose out of node_modules into ``staging/bin/opencode``."""
    modules = staging / "npm" / "node_modules"
    # The postinstall's pick first; the platform packages when scripts were disabled
    # (npm's ignore-scripts=true leaves opencode.exe a placeholder that does not run).
    candidates = [modules / NPM_PACKAGE / "bin" / "opencode.exe", *sorted(modules.glob("opencode-*/bin/opencode"))]
    for candidate in candidates:
        if candidate.is_file() and binary_version(candidate) == version:
            (staging / "bin").mkdir()
            target = staging / "bin" / "opencode"
            os.replace(candidate, target)
            target.chmod(0o755)
            shutil.rmtree(staging / "npm")
            return target
    raise OpenCodeInstallError(
        f"npm installed {NPM_PACKAGE}@{version} but no binary in it answers `--version` with {version} "
        "(unsupported platform?)"
    )


def _remove_leftovers(root: Path, version: str) -> None:
    # Staging directories of installs killed before their cleanup ran; we hold the lock, so
    # nobody else is using them.
    for leftover in root.glob(f".{version}.partial-*"):
        shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def install_lock(path: Path, say: Progress) -> Iterator[None]:
    """One installer at a time per ``path`` (flock: across processes, and threads with their own handle)."""
    with open(path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("waiting for another smoldata-tui to finish installing OpenCode…")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _tree_size(path: Path) -> int:
    seen: dict[tuple[int, int], int] = {}  # by inode: the postinstall hard-links the binary
    for dirpath, _dirnames, filenames in os.walk(path):
        for name in filenames:
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # npm moves files around while we count
            seen[(info.st_dev, info.st_ino)] = info.st_size
    return sum(seen.values())


def _throwaway_home_env(home: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("XDG_")}
    env.update(HOME=home, OPENCODE_DISABLE_AUTOUPDATE="1")
    return env
