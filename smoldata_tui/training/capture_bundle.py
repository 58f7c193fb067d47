"""What the capture runner needs in a sandbox whose Python has no openenv, made on the host.

A sandbox's image may have a plain system Python (Debian's ``python3``: externally managed, so
``pip install`` is refused; maybe no pip at all). So the host makes a bundle: the files of exactly
what the runner loads, found by running it in a clean interpreter (:mod:`capture_collect`):
openenv's capture modules (with empty ``__init__``\\ s for ``openenv.core`` and
``openenv.core.harness``, whose real ones load gradio) and the whole top-level packages of the
third-party libraries it touched (a library may import more of itself later), with their
dist-info. Compiled files must suit the sandbox's Python: a distribution whose installed wheel tags
fit it is copied from the host; otherwise the host downloads the wheel that does
(``pip download --only-binary=:all: --no-deps``, cached) and takes its files. The sandbox needs
neither pip nor network access to a package index, and nothing is written into its system Python:
the runner starts as ``python3 -I -S`` with the bundle's folder first on ``sys.path``.

A bundle is a tar.gz cached under ``$XDG_CACHE_HOME/smoldata-tui/capture-bundle``, named by the
openenv version, the sandbox Python's tag and a digest of the runner's code; made once per tag
(a lock per process, an atomic rename between processes) and reused by every later episode.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.training import capture_collect, capture_policy, capture_wheels
from smoldata_tui.training.capture_policy import CaptureFailed

BUNDLE_FORMAT = 1
SITE = "site"  # the bundle's folder inside the capture folder
MIN_OPENENV = (0, 10)  # the first openenv with the capture layer the runner uses
COLLECT_TIMEOUT_S = 180.0
_OPENENV_PARENTS = ("openenv/core", "openenv/core/harness")  # import_openenv skips their __init__
_EXTENSIONS = (".so", ".pyd")

# Run by the sandbox's own shell: the first python3 (or python) and what it is, as one JSON line.
_PROBE_CODE = r"""
import json, os, platform, sys, sysconfig
found = None
try:
    import importlib.metadata as m, importlib.util as u
    spec = u.find_spec("openenv")
    if spec and os.path.isfile(os.path.join(spec.submodule_search_locations[0], "core/harness/capture/runner.py")):
        found = m.version("openenv")
except Exception:
    pass
libc = platform.libc_ver()
print(json.dumps({"implementation": sys.implementation.name, "version": list(sys.version_info[:2]),
                  "machine": platform.machine(), "libc": libc[0], "libc_version": libc[1],
                  "soabi": sysconfig.get_config_var("SOABI") or "", "openenv": found}))
"""


def probe_script() -> str:
    import shlex

    return ("for p in python3 python; do command -v $p >/dev/null 2>&1 || continue; "
            f"echo \"$p\"; exec $p -c {shlex.quote(_PROBE_CODE)}; done; exit 4")  # fmt: skip


@dataclass(frozen=True)
class SandboxPython:
    """The sandbox's Python, as far as compiled files and the bundle care."""

    command: str  # python3 or python
    implementation: str
    version: tuple[int, int]
    machine: str
    libc: str  # "glibc", or "" when the probe could not tell (musl)
    libc_version: tuple[int, int] | None
    soabi: str
    openenv: str | None = None  # a usable openenv capture layer already in it

    @property
    def tag(self) -> str:
        libc = f"{self.libc}{'.'.join(map(str, self.libc_version or ()))}" or "libc-unknown"
        return f"{self.implementation}{self.version[0]}{self.version[1]}-{self.machine}-{libc}"

    @property
    def has_capture_layer(self) -> bool:
        return self.openenv is not None and _version_tuple(self.openenv) >= MIN_OPENENV

    def describe(self) -> str:
        return f"{self.command} ({self.implementation} {self.version[0]}.{self.version[1]}, {self.machine}, {self.libc or 'unknown C library'})"


def parse_probe(exit_code: int, stdout: str, stderr: str) -> SandboxPython:
    """The probe's answer, or CaptureFailed saying what is wrong with the sandbox's Python."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if exit_code == 4 and not lines:
        raise CaptureFailed("the sandbox has no python3 (nor python) on its PATH, so the capture proxy cannot run in it: run with --no-capture")
    try:
        data = json.loads(lines[1])
        found = SandboxPython(
            command=lines[0].strip(), implementation=str(data["implementation"]), version=(int(data["version"][0]), int(data["version"][1])),
            machine=str(data["machine"]), libc=str(data["libc"] or ""),
            libc_version=_version_tuple(data["libc_version"])[:2] or None,
            soabi=str(data["soabi"]), openenv=data["openenv"] if isinstance(data["openenv"], str) else None)  # fmt: skip
    except (IndexError, KeyError, TypeError, ValueError):
        said = last_line(stderr) or last_line(stdout) or f"exit code {exit_code}"
        raise CaptureFailed(f"the sandbox's python3 did not say what it is ({said}): run with --no-capture") from None
    if found.command not in ("python3", "python"):
        raise CaptureFailed("the sandbox's Python probe answered for an unknown interpreter: run with --no-capture")
    return found


def check_supported(found: SandboxPython) -> None:
    """CaptureFailed when no bundle can serve this Python (the reason, in one line)."""
    if found.implementation != "cpython":
        raise CaptureFailed(f"the sandbox's {found.describe()} is not CPython, which the capture bundle's compiled "
                            "files are built for: run with --no-capture")  # fmt: skip
    if found.libc != "glibc" or not found.libc_version:
        raise CaptureFailed(f"the sandbox's {found.describe()} does not use glibc, and the capture bundle's "
                            "compiled files need it: run with --no-capture")  # fmt: skip


# --- the bundle -----------------------------------------------------------------------------
_memo_lock = threading.Lock()
_collected: dict | None = None
_bundle_locks: dict[str, threading.Lock] = {}


def cache_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "smoldata-tui", "capture-bundle")


def bundle_for(target: SandboxPython, say=lambda _message: None) -> tuple[Path, dict]:
    """(the bundle's path, what it holds) for ``target``, made now unless cached."""
    check_supported(target)
    name = f"openenv-{_host_openenv()}-{target.tag}-{_code_digest()}"
    path = cache_dir() / f"{name}.tar.gz"
    with _memo_lock:
        lock = _bundle_locks.setdefault(name, threading.Lock())
    with lock:
        if path.is_file() and path.with_suffix(".json").is_file():
            return path, json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        say(f"making the capture bundle for {target.tag} (once; cached in {cache_dir()})")
        members, summary = _members(collected(), target, say)
        _write_atomically(path, members)
        summary["bytes"] = path.stat().st_size
        _write_text_atomically(path.with_suffix(".json"), json.dumps(summary))
        return path, summary


def collected() -> dict:
    """What the runner loads (:mod:`capture_collect`), found once per process."""
    global _collected
    with _memo_lock:
        if _collected is not None:
            return _collected
    import site

    folders = [folder for folder in dict.fromkeys([*site.getsitepackages(), *sys.path]) if "-packages" in folder and os.path.isdir(folder)]
    command = [sys.executable, "-I", "-S", capture_collect.__file__, capture_policy.__file__, *folders]
    env = {"PATH": os.defpath, "HOME": os.path.expanduser("~"), "LANG": "C.UTF-8"}  # no SSL_CERT_FILE etc.
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COLLECT_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
        report = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise CaptureFailed(f"finding what the capture runner needs failed on this host: {exc}") from None
    if not isinstance(report, dict):
        raise CaptureFailed(f"finding what the capture runner needs failed on this host: {last_line(done.stderr) or done.returncode}")
    with _memo_lock:
        _collected = report
    return report


def _members(report: dict, target: SandboxPython, say) -> tuple[list[tuple[str, object]], dict]:
    """The bundle's files as (name in the bundle, host path, bytes or (wheel, member)), and a summary."""
    by_top: dict[str, tuple[Path, set[str]]] = {}  # top-level name -> (its site folder, loaded files)
    for file in report["files"]:
        for site in report["site"]:
            if file.startswith(site.rstrip("/") + "/"):
                relative = file[len(site.rstrip("/")) + 1 :]
                by_top.setdefault(_top_name(relative.split("/")[0]), (Path(site), set()))[1].add(relative)
    members: list[tuple[str, object]] = []
    fetched, left_out, bundled = [], [], set()
    wheels = cache_dir() / "wheels"
    check_python_floor({d for top in by_top for d in report["top_levels"].get(top, [])}, target)
    for top, (site, loaded) in sorted(by_top.items()):
        dists = [d for d in report["top_levels"].get(top, []) if d in report["distributions"]]
        bundled.update(dists)
        if top == "openenv":
            members += _openenv_members(site, loaded)
        else:
            files = _top_files(site, top)
            if any(name.endswith(_EXTENSIONS) for name, _ in files) and not all(
                    capture_wheels.host_fits(report["distributions"][d].get("dist_info"), target) for d in dists):  # fmt: skip
                try:
                    wanted = [f"{d}=={report['distributions'][d]['version']}" for d in dists]
                    files = [m for w in wanted for m in capture_wheels.wheel_members(capture_wheels.wheel_for(w, target, wheels, say), SITE, top)]
                    fetched += wanted
                except CaptureFailed as exc:
                    left_out.append(f"{top} ({exc})")
                    continue
            members += files
        for dist in dists:
            members += _dist_info_members(report["distributions"][dist].get("dist_info"))
    # Dependencies only the sandbox's Python needs (none when it is the host's version), and theirs.
    needed = [r for dist in sorted(bundled) for r in capture_wheels.only_target_needs(capture_wheels.host_requirements(dist), target)]
    seen = {_normal(dist) for dist in bundled}
    while needed:
        requirement = needed.pop(0)
        name = _normal(re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0])
        if name in seen:
            continue
        seen.add(name)
        try:
            wheel = capture_wheels.wheel_for(requirement, target, wheels, say)
        except CaptureFailed as exc:
            left_out.append(str(exc))
            continue
        fetched.append(requirement)
        members += capture_wheels.wheel_members(wheel, SITE)
        needed += capture_wheels.only_target_needs(capture_wheels.wheel_requirements(wheel), target)
        needed += [r for r in capture_wheels.wheel_requirements(wheel) if ";" not in r]  # its plain dependencies
    unique = list(dict((name, source) for name, source in members).items())
    return unique, {"tag": target.tag, "files": len(unique), "fetched": fetched, "left_out": left_out}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_name(first: str) -> str:
    return first.split(".", 1)[0] if not first.endswith(".dist-info") else first


def _top_files(site: Path, top: str) -> list[tuple[str, object]]:
    folder = site / top
    if folder.is_dir():
        return [(f"{SITE}/{path.relative_to(site).as_posix()}", path) for path in sorted(folder.rglob("*"))
                if path.is_file() and "__pycache__" not in path.parts]  # fmt: skip
    return [(f"{SITE}/{path.name}", path) for path in sorted(site.glob(f"{top}.*")) if path.is_file() and path.suffix in (".py", *_EXTENSIONS)]


def _openenv_members(site: Path, loaded: set[str]) -> list[tuple[str, object]]:
    members: list[tuple[str, object]] = [(f"{SITE}/{relative}", site / relative) for relative in sorted(loaded)]
    for parent in _OPENENV_PARENTS:
        if f"{parent}/__init__.py" not in loaded:  # empty: the real one imports gradio
            members.append((f"{SITE}/{parent}/__init__.py", b'"""Empty in the capture bundle: its real __init__ loads gradio."""\n'))
    return members


def _dist_info_members(folder: str | None) -> list[tuple[str, object]]:
    if not folder or not os.path.isdir(folder):
        return []
    root = Path(folder)
    return [(f"{SITE}/{root.name}/{path.name}", path) for path in sorted(root.iterdir()) if path.is_file()]


# --- writing, and small helpers -------------------------------------------------------------
def _write_atomically(path: Path, members: list[tuple[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with tarfile.open(temporary, "w:gz", compresslevel=1) as archive:
            for name, source in members:
                _add(archive, name, source)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _add(archive: tarfile.TarFile, name: str, source: object) -> None:
    import io

    if isinstance(source, Path):
        data = source.read_bytes()
        mode = 0o755 if source.suffix in _EXTENSIONS else 0o644
    elif isinstance(source, bytes):
        data, mode = source, 0o644
    else:
        wheel, member = source
        with zipfile.ZipFile(wheel) as opened:
            data = opened.read(member)
        mode = 0o755 if member.endswith(_EXTENSIONS) else 0o644
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    archive.addfile(info, io.BytesIO(data))


def _write_text_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, path)


def _host_openenv() -> str:
    from importlib.metadata import version

    return version("openenv")


def check_python_floor(dists: set[str], target: SandboxPython) -> None:
    """CaptureFailed when a library of the bundle, in the host's version, needs a newer Python
    than the sandbox's (its ``Requires-Python: >=3.11``)."""
    from importlib.metadata import PackageNotFoundError, metadata

    floors: dict[tuple[int, int], list[str]] = {}
    for dist in sorted(dists):
        try:
            found = re.search(r">=\s*(\d+)\.(\d+)", metadata(dist).get("Requires-Python") or "")
        except PackageNotFoundError:
            continue
        if found and target.version < (int(found[1]), int(found[2])):
            floors.setdefault((int(found[1]), int(found[2])), []).append(dist)
    if floors:
        floor = max(floors)
        raise CaptureFailed(f"the sandbox's {target.describe()} is older than the capture runner's libraries need "
                            f"(Python ≥ {floor[0]}.{floor[1]} for {', '.join(floors[floor][:4])} as installed on this "
                            "host): run with --no-capture, or use an image with a newer python3")  # fmt: skip


def _code_digest() -> str:
    digest = hashlib.sha256(f"{BUNDLE_FORMAT}\0{sys.executable}\0".encode())
    for module in (capture_policy, capture_collect):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:12]


def _version_tuple(text: object) -> tuple[int, ...]:
    numbers = []
    for part in str(text).split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits[0]))
    return tuple(numbers)


def last_line(text: str, limit: int = 300) -> str:
    """The last non-empty line of some output (where a traceback or pip says why), bounded."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
