"""Wheels for a sandbox's Python that is not the host's, for :mod:`capture_bundle`.

Two things differ between the host's Python and a sandbox's: compiled files (built for one Python
version, C library and machine; a wheel's tags say which) and dependencies that a library declares
only for some Pythons (anyio needs ``exceptiongroup`` below 3.11). For both the host downloads the
wheel that suits the sandbox with ``pip download --only-binary=:all: --no-deps`` into a cache
folder, once; :func:`wheel_members` lists the files a bundle takes from it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from smoldata_tui.training.capture_policy import CaptureFailed

FETCH_TIMEOUT_S = 300.0
_LEGACY_MANYLINUX = (("manylinux2014", 17), ("manylinux2010", 12), ("manylinux1", 5))


def platform_tags(target) -> list[str]:
    """The glibc platform tags a wheel may carry to run on ``target``, best first."""
    major, minor = target.libc_version or (0, 0)
    if major != 2:
        return []
    tags = [f"manylinux_2_{m}_{target.machine}" for m in range(minor, 4, -1)]
    return tags + [f"{legacy}_{target.machine}" for legacy, needs in _LEGACY_MANYLINUX if minor >= needs]


def tag_fits(tag: str, target) -> bool:
    """Whether a wheel tag (``cp311-cp311-manylinux_2_17_x86_64``; dotted sets allowed) runs on ``target``."""
    try:
        interpreters, abis, platforms = (part.split(".") for part in tag.strip().split("-"))
    except ValueError:
        return False
    major, minor = target.version
    cpython = f"cp{major}{minor}"
    if not any(p == "any" or p in platform_tags(target) for p in platforms):
        return False
    for interpreter in interpreters:
        for abi in abis:
            if abi == cpython and interpreter == cpython:
                return True
            if abi == "abi3" and re.fullmatch(rf"cp{major}(\d+)", interpreter) and int(interpreter[3:]) <= minor:
                return True
            if abi == "none" and interpreter in (f"py{major}", f"py{major}{minor}", cpython):
                return True
    return False


def host_fits(dist_info: str | None, target) -> bool:
    """Whether the host's installed wheel (its dist-info's ``WHEEL`` tags) runs on ``target``."""
    try:
        wheel = Path(dist_info, "WHEEL").read_text(encoding="utf-8")
    except (OSError, TypeError):
        return False
    return any(tag_fits(line.split(":", 1)[1], target) for line in wheel.splitlines() if line.startswith("Tag:"))


def wheel_for(requirement: str, target, folder: Path, say) -> Path:
    """A cached wheel meeting ``requirement`` (``pydantic_core==2.50.5``) that runs on ``target``,
    downloaded when there is none."""
    from packaging.requirements import Requirement

    wanted = Requirement(requirement)
    stem = re.sub(r"[-_.]+", "_", wanted.name).lower()
    folder.mkdir(parents=True, exist_ok=True)
    for wheel in sorted(folder.glob("*.whl")):
        parts = wheel.name[:-4].split("-")
        if (len(parts) >= 5 and parts[0].lower() == stem and wanted.specifier.contains(parts[1], prereleases=True)
                and tag_fits("-".join(parts[-3:]), target)):  # fmt: skip
            return wheel
    major, minor = target.version
    say(f"fetching {requirement} for {target.tag} from the package index (once)")
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:",
                   "--no-deps", "--python-version", f"{major}.{minor}", "--implementation", "cp", "--abi", f"cp{major}{minor}",
                   "--abi", "abi3", "--abi", "none", *[arg for tag in platform_tags(target) for arg in ("--platform", tag)],
                   "--dest", scratch, str(wanted)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CaptureFailed(f"no {requirement} wheel for {target.tag}: {exc}") from None
        wheels = list(Path(scratch).glob("*.whl"))
        if done.returncode != 0 or len(wheels) != 1:
            said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
            raise CaptureFailed(f"no {requirement} wheel for {target.tag}: {said[-1][:300] if said else done.returncode}")
        final = folder / wheels[0].name
        os.replace(wheels[0], final)
    return final


def wheel_members(wheel: Path, site: str, top: str | None = None) -> list[tuple[str, object]]:
    """(name in the bundle, (wheel, member)) for the wheel's files under ``top`` (a top-level
    module or package name), or all of them but its ``.data`` folder."""
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if not name.endswith("/")]
    def wanted(head: str) -> bool:
        if top is None:
            return not head.endswith(".data")
        return head.split(".", 1)[0] == top and not head.endswith(".dist-info")

    return [(f"{site}/{name}", (wheel, name)) for name in names if wanted(name.split("/")[0])]


def wheel_requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        found = next((name for name in archive.namelist() if name.endswith(".dist-info/METADATA")), None)
        text = archive.read(found).decode("utf-8", "replace") if found else ""
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def only_target_needs(requirements: list[str], target) -> list[str]:
    """The requirements whose environment marker holds for ``target``'s Python and not for the
    host's (``exceptiongroup; python_version < "3.11"`` for 3.10 from 3.11): what the host has no
    reason to have, and the sandbox needs. Extras are never asked for."""
    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    host = {**default_environment(), "extra": ""}
    major, minor = target.version
    sandbox = {**host, "python_version": f"{major}.{minor}", "python_full_version": f"{major}.{minor}.0",
               "platform_machine": target.machine, "implementation_name": target.implementation}  # fmt: skip
    wanted = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and requirement.marker.evaluate(sandbox) and not requirement.marker.evaluate(host):
            wanted.append(f"{requirement.name}{requirement.specifier}")
    return wanted


def host_requirements(dist: str) -> list[str]:
    try:
        return metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
