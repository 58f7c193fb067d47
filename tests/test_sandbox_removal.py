"""A sandbox's folder is removed whatever the agent made of it (any depth, past PATH_MAX, 100k
files, read-only and unreadable folders, symlinks out of it), and one that cannot be removed is
said: the episode ends in error with a non-zero exit, the next sandbox is created anyway, and
``local gc`` says what it could not remove instead of crashing. The episode's agent is the stand-in
OpenCode (tests/standin_agent): the test is about our sandbox release, not OpenCode."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import traceback
from pathlib import Path

import pytest

from smoldata_tui.sandbox import LocalSandboxBackend, registry
from smoldata_tui.sandbox.layout import remove_tree

from .test_episode_local import processes_matching, sandbox_dirs, standin_sandboxes  # noqa: F401 - a fixture
from .test_live_exits import AGENT_START_S, _wait_for
from .test_sandbox_support import GRACE_S, assert_fully_removed, backend, base_dir  # noqa: F401 - fixtures
from .test_shared_cache_runs import RUN_S, cli, final_line, start_run, waiting_recording

DEEP = 1200  # levels: Python 3.11's shutil.rmtree (and os.walk) recurse once per level
PAST_PATH_MAX = 3000  # levels of "dd/": 9,000 bytes of path, over Linux's PATH_MAX of 4,096
FILES = 100_000
# `chattr +i`: a file even root cannot remove, until `chattr -i` (root only, and ext4/xfs/btrfs)
needs_chattr = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                                  reason="making a file unremovable needs root and chattr")  # fmt: skip


def test_kill_removes_a_tree_of_any_depth_and_size_and_nothing_outside_it(backend, tmp_path):  # noqa: F811
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept\n")
    sandbox = backend.create()
    made = sandbox.exec(
        f"cd /workdir && mkdir -p $(printf 'd/%.0s' $(seq {DEEP})) && "
        f"mkdir many && (cd many && seq {FILES} | xargs touch) && "
        f"python3 -c 'import os\nfor _ in range({PAST_PATH_MAX}): os.mkdir(\"dd\"); os.chdir(\"dd\")\n"
        f"os.symlink(\"{outside}\", \"out\"); open(\"f\", \"w\").close()' && "
        f"ln -s {outside} /workdir/link-out && ln -s {outside}/keep /workdir/many/file-out && "
        "mkdir -p locked/inner && touch locked/inner/f && chmod 500 locked/inner && chmod 000 locked && "
        "chmod 555 many",
        timeout=600,
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    root = sandbox.root / "workdir"
    assert len(os.listdir(root / "many")) == FILES + 1
    started = time.monotonic()
    sandbox.kill()
    took = time.monotonic() - started
    assert_fully_removed(sandbox)
    assert os.listdir(outside) == ["keep"] and (outside / "keep").read_text() == "kept\n"  # no symlink was followed
    assert took < 60, f"removing the tree took {took:.1f} s"


def test_folders_made_read_only_or_unreadable_are_removed_by_a_non_root_owner():
    """Permissions bind only a non-root owner: as root, the test drops to ``nobody`` in a forked
    child (the module is imported already, so nothing under root's home is read again)."""
    owner = 65534 if os.geteuid() == 0 else os.geteuid()
    work = Path(tempfile.mkdtemp(prefix="smoldata-removal-"))  # not under root's 0700 pytest folder
    os.chown(work, owner, owner)
    top = work / "top"
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit status
        code = 1
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(owner)
                os.setuid(owner)
            (top / "a" / "b" / "c").mkdir(parents=True)
            (top / "a" / "b" / "c" / "f").touch()
            (top / "a" / "b" / "c").chmod(0o500)  # its file cannot be unlinked
            (top / "a" / "b").chmod(0)  # cannot even be listed
            (top / "a").chmod(0o555)
            try:
                shutil.rmtree(top)
                code = 3  # then this owner was not bound by permissions: the test proves nothing
            except PermissionError:
                remove_tree(top)
                code = 0 if not os.path.lexists(top) else 2
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert os.listdir(work) == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_removal_never_enters_another_file_system(tmp_path):
    tree = tmp_path / "tree"
    mounted = tree / "a" / "mounted"
    mounted.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "none", str(mounted)], check=True)
    try:
        (mounted / "not-ours").write_text("kept\n")
        with pytest.raises(OSError) as raised:
            remove_tree(tree)
        assert "another file system" in str(raised.value)
        assert (mounted / "not-ours").read_text() == "kept\n"
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
    remove_tree(tree)
    assert not tree.exists()


@needs_chattr
def test_a_leftover_that_cannot_be_removed_never_blocks_a_new_sandbox(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    base = tmp_path / "cache" / "smoldata-tui" / "sandboxes"
    backend = LocalSandboxBackend(base_dir=base, kill_grace_s=GRACE_S)
    sandbox = backend.create()
    stuck = sandbox.root / "workdir" / "stuck"
    assert sandbox.exec("touch /workdir/stuck").exit_code == 0
    subprocess.run(["chattr", "+i", str(stuck)], check=True)
    try:
        with pytest.raises(OSError):
            sandbox.kill()  # said to its caller, not swallowed
        assert sandbox.control_dir.is_dir() and not sandbox.alive
        [left] = registry.list_sandboxes(base)
        assert left.control_dir == sandbox.control_dir and not left.owner_alive  # a leftover now

        with caplog.at_level("WARNING", logger="smoldata_tui.sandbox.registry"):
            with backend.create() as next_one:  # its start-up sweep skips what it cannot remove
                assert next_one.exec("echo ok").stdout == "ok\n"
        assert f"could not remove the leftover sandbox {sandbox.control_dir}" in caplog.text
        assert sandbox_dirs(base) == [sandbox.control_dir]

        collected = cli("local", "gc", "--yes", cwd=tmp_path)
        assert collected.returncode == 1, collected.stdout + collected.stderr
        assert f"could not remove {sandbox.control_dir}" in collected.stderr
        assert "could not be cleaned up" in collected.stderr and "Traceback" not in collected.stderr
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=False)
    collected = cli("local", "gc", "--yes", cwd=tmp_path)
    assert collected.returncode == 0 and f"removed {sandbox.sandbox_id}" in collected.stdout
    assert sandbox_dirs(base) == []


@needs_chattr
def test_an_episode_whose_sandbox_cannot_be_removed_ends_in_error(tmp_path, standin_sandboxes):  # noqa: F811
    runs = tmp_path / "runs"
    marker = f"unremovable-{os.getpid()}"
    recording = waiting_recording(tmp_path, marker, also="touch /workdir/stuck;")
    run = start_run(recording, runs, tmp_path, own_pid_namespace=False)
    stuck = None
    try:
        assert _wait_for(lambda: processes_matching(f"go-{marker}"), AGENT_START_S)
        [live] = sandbox_dirs(standin_sandboxes)
        stuck = live / "root" / "workdir" / "stuck"
        assert _wait_for(stuck.exists, 30)
        subprocess.run(["chattr", "+i", str(stuck)], check=True)
        (live / "root" / "workdir" / f"go-{marker}").touch()
        assert run.wait(RUN_S) == 1, (tmp_path / f"{recording.stem}.out").read_text(errors="replace")[-3000:]
        summary = final_line(recording, tmp_path)
        assert summary["status"] == "error"
        assert summary["error"].startswith("release sandbox: the sandbox could not be removed:")
        assert summary["grade"]["env_reward"] == 1.0  # the grade stays: only the release failed
        [meta_path] = runs.glob("*/run.meta.json")
        saved = json.loads(meta_path.read_text())
        assert saved["status"] == "error" and saved["error"]["stage"] == "release sandbox"
        assert "could not be removed" in saved["error"]["message"]
        assert not meta_path.with_name("run.lock").exists()
        assert sandbox_dirs(standin_sandboxes) == [live]  # left for gc, said above
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if stuck is not None:
            subprocess.run(["chattr", "-i", str(stuck)], check=False)
    collected = cli("local", "gc", "--yes", cwd=tmp_path)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert sandbox_dirs(standin_sandboxes) == []
