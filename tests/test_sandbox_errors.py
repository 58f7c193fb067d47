"""Expected failures give a SandboxError with a message that says what to do, never a traceback
from deep inside: no bubblewrap, no namespaces, bad binds. Fake ``bwrap`` scripts stand in for
machines where bubblewrap cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoldata_tui.sandbox import (
    BubblewrapMissing,
    LocalSandboxBackend,
    NamespacesUnavailable,
    PathOutsideSandbox,
    SandboxError,
)
from smoldata_tui.sandbox.bubblewrap import failure_from_stderr

from .test_sandbox_support import base_dir  # noqa: F401 - fixture

NO_USERNS = (
    "bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces. On e.g. debian this can be enabled with "
    "'sysctl kernel.unprivileged_userns_clone=1'."
)


def fake_bwrap(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-bwrap"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_missing_bubblewrap_says_how_to_install_it(base_dir):
    backend = LocalSandboxBackend(bwrap="/nonexistent/bwrap", base_dir=base_dir)
    with pytest.raises(BubblewrapMissing) as caught:
        backend.create()
    assert isinstance(caught.value, SandboxError)
    assert "apt-get install bubblewrap" in str(caught.value)
    assert "dnf install bubblewrap" in str(caught.value)
    assert not base_dir.exists()


def test_no_user_namespaces_is_explained(tmp_path, base_dir):
    bwrap = fake_bwrap(tmp_path, f"echo \"{NO_USERNS}\" >&2; exit 1")
    with pytest.raises(NamespacesUnavailable) as caught:
        LocalSandboxBackend(bwrap=bwrap, base_dir=base_dir).create()
    message = str(caught.value)
    assert "kernel.unprivileged_userns_clone" in message
    assert "apparmor_restrict_unprivileged_userns" in message
    assert "container" in message


def test_the_namespace_probe_runs_once_per_bwrap(tmp_path, base_dir):
    calls = tmp_path / "calls"
    bwrap = fake_bwrap(tmp_path, f"echo run >> {calls}; echo \"{NO_USERNS}\" >&2; exit 1")
    backend = LocalSandboxBackend(bwrap=bwrap, base_dir=base_dir)
    for _ in range(3):
        with pytest.raises(NamespacesUnavailable):
            backend.create()
    assert calls.read_text() == "run\n"


def test_a_keeper_that_fails_after_the_probe_leaves_nothing_behind(tmp_path, base_dir):
    # Passes the probe (argv has --unshare-user), fails as the keeper (options come via --args).
    bwrap = fake_bwrap(
        tmp_path,
        'case "$*" in *--unshare-user*) exit 0;; esac\n'
        'echo "bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted" >&2; exit 1',
    )
    with pytest.raises(NamespacesUnavailable, match="Can't mount proc"):
        LocalSandboxBackend(bwrap=bwrap, base_dir=base_dir).create()
    assert list(base_dir.iterdir()) == []


def test_other_bwrap_failures_keep_bwraps_words():
    error = failure_from_stderr("bwrap: Unknown option --frobnicate\n")
    assert type(error) is SandboxError
    assert "Unknown option --frobnicate" in str(error)
    assert isinstance(failure_from_stderr("bwrap: setting up uid map: Permission denied"), NamespacesUnavailable)


def test_bad_binds_are_refused_when_the_backend_is_made(tmp_path):
    with pytest.raises(SandboxError, match="does not exist"):
        LocalSandboxBackend(binds=[(tmp_path / "missing", "/opt/x")])
    for target in ("/proc/x", "/dev/x", "/"):
        with pytest.raises(SandboxError, match="kernel filesystem"):
            LocalSandboxBackend(binds=[(tmp_path, target)])
    with pytest.raises(PathOutsideSandbox):
        LocalSandboxBackend(binds=[(tmp_path, "opt/relative")])
    with pytest.raises(SandboxError, match="bin/opencode"):
        LocalSandboxBackend(opencode_dir=tmp_path)
