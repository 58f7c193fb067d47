"""Installing OpenCode: reuse, clear errors, one installer at a time, nothing half-installed.

The real installation is exercised by the ``opencode_bin`` fixture (the pinned version from
npm into the user cache) and the "not on npm" test asks the real registry. The lock and
interruption tests need an install that takes as long as they say, so they put a stand-in
``npm`` first on PATH: a script that "installs" a tiny opencode.exe printing its version, the
way npm's postinstall leaves the real one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from smoldata_tui.opencode.install import (
    DEFAULT_OPENCODE_VERSION,
    OpenCodeInstallError,
    ensure_opencode,
    installed_binary,
    opencode_cache_dir,
    resolve_opencode,
)

from .conftest import ROOT
from .opencode_fixture import opencode_bin  # noqa: F401 - fixture

FAKE_NPM = textwrap.dedent(
    """\
    #!{python}
    import os, pathlib, sys, time
    args = sys.argv[1:]
    prefix = pathlib.Path(args[args.index("--prefix") + 1])
    version = next(a for a in args if a.startswith("opencode-ai@")).split("@", 1)[1]
    with open(os.environ["FAKE_NPM_LOG"], "a") as log:
        log.write(f"{{os.getpid()}} {{version}}\\n")
    time.sleep(float(os.environ.get("FAKE_NPM_SECONDS", "0")))
    bin_dir = prefix / "node_modules" / "opencode-ai" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "opencode.exe").write_text(f"#!/bin/sh\\necho {{version}}\\n")
    (bin_dir / "opencode.exe").chmod(0o755)
    """
)


@pytest.fixture
def fake_npm(tmp_path, monkeypatch):
    """A stand-in npm first on PATH; returns the file it logs "pid version" lines to."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM.format(python=sys.executable))
    npm.chmod(0o755)
    log = tmp_path / "npm.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    return log


def installer(cache: Path, version: str) -> subprocess.Popen:
    # Ctrl-C as a terminal delivers it: a suite started in the background (`pytest &` in a script)
    # runs with SIGINT ignored, which every child inherits and Python then leaves ignored; that
    # made the interrupt test fail in some workers (its failure message showed SigIgn 0x...1006).
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from smoldata_tui.opencode.install import ensure_opencode\n"
        f"print(ensure_opencode({version!r}, cache_dir={str(cache)!r}, progress=lambda line: print(line, flush=True)))"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )


def test_pinned_version_is_installed_once_and_reused(opencode_bin):  # noqa: F811
    assert opencode_bin == installed_binary(DEFAULT_OPENCODE_VERSION)
    assert opencode_bin.parent.parent.parent == opencode_cache_dir()
    lines: list[str] = []
    started = time.monotonic()
    assert ensure_opencode(progress=lines.append) == opencode_bin
    assert time.monotonic() - started < 10 and lines == []  # no download the second time
    assert not list(opencode_cache_dir().glob(".*.partial-*"))
    assert (opencode_bin.parent.parent / "install.json").is_file()


def test_cache_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert installed_binary("1.2.3") == tmp_path / "smoldata-tui" / "opencode" / "1.2.3" / "bin" / "opencode"


def test_version_not_on_npm_is_a_clear_error(tmp_path):
    with pytest.raises(OpenCodeInstallError, match=r"opencode-ai@0\.0\.0-no-such-version is not on npm"):
        ensure_opencode("0.0.0-no-such-version", cache_dir=tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [".0.0.0-no-such-version.lock"]  # nothing half-installed


def test_missing_npm_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(OpenCodeInstallError, match="npm was not found.*Node.js.*--opencode-bin"):
        ensure_opencode("1.2.3", cache_dir=tmp_path)


def test_malformed_version_is_refused_before_touching_anything(tmp_path):
    for version in ("../../etc", "1.2.3 && rm -rf /", "", "latest"):
        with pytest.raises(OpenCodeInstallError, match="is not an exact OpenCode version"):
            ensure_opencode(version, cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_install_reports_progress_and_replaces_leftovers(tmp_path, fake_npm):
    cache = tmp_path / "cache"
    (cache / ".9.9.9.partial-killed").mkdir(parents=True)  # an installer SIGKILLed mid-way
    (cache / "9.9.9" / "bin").mkdir(parents=True)  # a broken install: no working binary
    lines: list[str] = []
    binary = ensure_opencode("9.9.9", cache_dir=cache, progress=lines.append)
    assert binary == cache / "9.9.9" / "bin" / "opencode"
    assert subprocess.run([binary, "--version"], capture_output=True, text=True).stdout == "9.9.9\n"
    assert lines[0] == "downloading opencode-ai@9.9.9 from npm…"
    assert lines[-1].startswith("installed OpenCode 9.9.9 (") and lines[-1].endswith(str(binary))
    assert sorted(path.name for path in cache.iterdir()) == [".9.9.9.lock", "9.9.9"]
    assert not (cache / "9.9.9" / "npm").exists()  # node_modules is not kept


def test_two_installers_at_once_install_once(tmp_path, fake_npm, monkeypatch):
    monkeypatch.setenv("FAKE_NPM_SECONDS", "1.5")
    cache = tmp_path / "cache"
    first = installer(cache, "9.9.9")
    time.sleep(0.3)
    second = installer(cache, "9.9.9")
    outputs = [proc.communicate(timeout=30)[0] for proc in (first, second)]
    assert [proc.returncode for proc in (first, second)] == [0, 0]
    expected = str(cache / "9.9.9" / "bin" / "opencode")
    assert [output.splitlines()[-1] for output in outputs] == [expected, expected]
    assert len(fake_npm.read_text().splitlines()) == 1  # the second one reused the first one's install
    assert "waiting for another smoldata-tui to finish installing OpenCode…" in outputs[1]


def test_an_installed_binary_is_started_once_to_check_it_until_its_file_changes(tmp_path, fake_npm):
    cache = tmp_path / "cache"
    assert installer(cache, "9.9.9").communicate(timeout=30)[0].splitlines()[-1] == str(cache / "9.9.9" / "bin" / "opencode")
    binary = cache / "9.9.9" / "bin" / "opencode"
    starts = tmp_path / "starts"
    # Each start of the binary is logged from now on.
    binary.write_text(f"#!/bin/sh\necho x >> {starts}; echo 9.9.9\n")
    for _ in range(2):  # new processes: the first asks the changed file, the second trusts the stamp
        done = installer(cache, "9.9.9").communicate(timeout=30)
        assert done[0].splitlines()[-1] == str(binary), done
    assert starts.read_text().count("x") == 1
    assert len(fake_npm.read_text().splitlines()) == 1  # never reinstalled
    binary.write_text("#!/bin/sh\necho 1.0.0\n")  # replaced by a binary of another version: asked, reinstalled
    installer(cache, "9.9.9").communicate(timeout=30)
    assert len(fake_npm.read_text().splitlines()) == 2


def _signal_state(pid: int) -> str:
    """The blocked, ignored and caught signal masks of a process (/proc/PID/status)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"unknown ({exc})"
    return ", ".join(line.replace("\t", " ") for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


def test_interrupted_install_leaves_no_cache_and_no_npm(tmp_path, fake_npm, monkeypatch):
    monkeypatch.setenv("FAKE_NPM_SECONDS", "60")
    cache = tmp_path / "cache"
    proc = installer(cache, "9.9.9")
    deadline = time.monotonic() + 20
    while not fake_npm.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    npm_pid = int(fake_npm.read_text().split()[0])
    signals = _signal_state(proc.pid)  # what the installer does with SIGINT, said if it never ends
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        _, stderr = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the installer went on after SIGINT; before it: {signals}") from None
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(npm_pid, 0)  # npm was killed with us, not left downloading
    assert sorted(path.name for path in cache.iterdir()) == [".9.9.9.lock"]


def test_explicit_binary_wins_and_a_version_mismatch_is_noted(opencode_bin, tmp_path):  # noqa: F811
    notes: list[str] = []
    assert resolve_opencode(opencode_bin, "1.0.0", progress=notes.append) == opencode_bin
    assert notes and f"is OpenCode {DEFAULT_OPENCODE_VERSION}, not 1.0.0" in notes[0]
    with pytest.raises(OpenCodeInstallError, match="no such executable"):
        resolve_opencode(tmp_path / "nowhere" / "opencode")
    not_opencode = tmp_path / "false-opencode"
    not_opencode.write_text("#!/bin/sh\nexit 1\n")
    not_opencode.chmod(0o755)
    with pytest.raises(OpenCodeInstallError, match="--version` failed"):
        resolve_opencode(not_opencode)


def test_cli_install_and_path(tmp_path, fake_npm):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    expected = str(tmp_path / "xdg" / "smoldata-tui" / "opencode" / "9.9.9" / "bin" / "opencode")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "smoldata_tui", "opencode", *args], capture_output=True, text=True, env=env, cwd=ROOT
        )

    missing = cli("path", "--version", "9.9.9")
    assert missing.returncode == 1 and "not installed" in missing.stderr and missing.stdout == ""
    installed = cli("install", "--version", "9.9.9")
    assert (installed.returncode, installed.stdout) == (0, expected + "\n")
    assert "downloading opencode-ai@9.9.9 from npm…" in installed.stderr
    assert cli("path", "--version", "9.9.9").stdout == expected + "\n"
    assert cli("install", "--version", "9.9.9").stderr == ""  # already there: nothing to say
    refused = cli("install", "--version", "../x")
    assert refused.returncode == 1 and "is not an exact OpenCode version" in refused.stderr


def test_unusable_cache_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OpenCodeInstallError, match="cannot install OpenCode 1.2.3 into"):
        ensure_opencode("1.2.3", cache_dir=blocker / "cache")
