"""OpenCode's plugin package is installed once per version, not by OpenCode in every episode: the
real OpenCode in a real bubblewrap sandbox finds it in both config folders it reads, read-only, and
runs no npm of its own."""

from __future__ import annotations

import json

import pytest

from smoldata_tui.opencode.plugin_deps import PLUGIN_PACKAGE, ensure_plugin_deps, plugin_deps_dir

from .opencode_fixture import opencode_bin  # noqa: F401 - a fixture
from .test_episode_caps import one_call_recording
from .test_episode_local import run_episode, sandboxes  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("opencode_bin")

# Run by the agent after OpenCode has been up for seconds: its own install would have begun by then
# (it starts at once, and npm makes ~/.npm on its first request).
PROBE = (
    "sleep 4; for d in /root/.config/opencode /root/.opencode; do "
    "if touch $d/node_modules/.probe 2>/dev/null; then echo \"$d writable\"; else echo \"$d read-only\"; fi; "
    "test -f $d/node_modules/@opencode-ai/plugin/package.json && echo \"$d has the plugin\"; done; "
    "test -e /root/.npm && echo 'npm ran' || echo 'no npm'"
)


def _bash_outputs(trace) -> list[str]:
    outputs = []
    for line in trace.read_bytes().splitlines():
        event = json.loads(line)
        if event.get("type") == "tool_use":
            outputs.append(event["part"]["state"].get("output", ""))
    return outputs


def test_opencode_in_a_local_episode_finds_its_plugin_package_and_installs_nothing(tmp_path, sandboxes):  # noqa: F811
    from smoldata_tui.opencode.install import DEFAULT_OPENCODE_VERSION

    result, _recorder = run_episode("sales-top-region", f"replay:{one_call_recording(tmp_path, PROBE)}", tmp_path / "runs",
                                    capture=False)  # fmt: skip
    (output,) = _bash_outputs(result.trace_path)
    for folder in ("/root/.config/opencode", "/root/.opencode"):
        assert f"{folder} read-only" in output, output  # the agent cannot change what later episodes load
        assert f"{folder} has the plugin" in output, output
    assert "no npm" in output, output
    deps = plugin_deps_dir(DEFAULT_OPENCODE_VERSION, sandboxes.parent / "opencode")
    package = json.loads((deps / "package.json").read_text())
    assert package == {"dependencies": {PLUGIN_PACKAGE: DEFAULT_OPENCODE_VERSION}}  # what OpenCode writes


def test_without_npm_nothing_is_prepared_and_the_reason_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    notes: list[str] = []
    assert ensure_plugin_deps("9.9.9", cache_dir=tmp_path / "cache", progress=notes.append) is None
    assert notes == [f"no npm: OpenCode will install {PLUGIN_PACKAGE} itself, in the sandbox"]
    assert not plugin_deps_dir("9.9.9", tmp_path / "cache").exists()


FAILING_NPM = """#!/bin/sh
echo "$$" >> "{log}"
sleep "${{FAKE_NPM_SECONDS:-0}}"
echo "npm error code ENOTFOUND" >&2
exit 1
"""


@pytest.fixture
def failing_npm(tmp_path, monkeypatch):
    """An npm that cannot reach its registry (first on PATH); returns the file it logs each start to."""
    bin_dir, log = tmp_path / "bin", tmp_path / "npm.log"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAILING_NPM.format(log=log))
    (bin_dir / "npm").chmod(0o755)
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return log


def test_an_offline_npm_is_asked_once_an_hour_not_at_every_episode(tmp_path, failing_npm):
    notes: list[str] = []
    assert ensure_plugin_deps("9.9.9", cache_dir=tmp_path / "cache", progress=notes.append) is None
    assert "registry is unreachable" in notes[-1] and "OpenCode will install it itself" in notes[-1], notes
    assert ensure_plugin_deps("9.9.9", cache_dir=tmp_path / "cache", progress=notes.append) is None
    assert "less than an hour ago" in notes[-1] and "registry is unreachable" in notes[-1], notes
    assert len(failing_npm.read_text().splitlines()) == 1  # the second episode did not wait on npm
    assert not plugin_deps_dir("9.9.9", tmp_path / "cache").exists()


def test_an_npm_that_hangs_is_given_up_on(tmp_path, failing_npm, monkeypatch):
    from smoldata_tui.opencode import plugin_deps

    monkeypatch.setenv("FAKE_NPM_SECONDS", "60")
    monkeypatch.setattr(plugin_deps, "NPM_TIMEOUT_S", 1.0)
    notes: list[str] = []
    assert ensure_plugin_deps("9.9.9", cache_dir=tmp_path / "cache", progress=notes.append) is None
    assert "did not finish within 1 s" in notes[-1], notes


def test_a_version_that_is_not_one_is_never_a_path(tmp_path):
    notes: list[str] = []
    assert ensure_plugin_deps("../../elsewhere", cache_dir=tmp_path / "cache", progress=notes.append) is None
    assert "OpenCode will install" in notes[-1]
    assert not (tmp_path / "cache").exists() and not (tmp_path / "elsewhere").exists()
