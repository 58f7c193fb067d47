"""Local sandboxes on bubblewrap, one per episode, with the layout of the environment's Daytona
sandbox. See docs/sandbox.md for what they isolate and what they do not.

How one sandbox is many bwrap runs, and why ``kill()`` provably ends every process:

- Creating a sandbox starts a *keeper*: a bwrap that makes the sandbox's user and PID namespaces and
  runs, as PID 1 of that namespace, a bash that only waits on a pipe from us.
- Every ``exec``/``start_bg`` is its own bwrap that *joins* those namespaces (``--userns``/``--pidns``)
  over the same root directory. So all commands share one process tree, as in a container: ``ps``
  in one shows the others, and what a command leaves running keeps running after it returns.
- ``kill()`` SIGTERMs the workload, waits a grace period, then SIGKILLs the keeper. When the init
  of a PID namespace dies the kernel SIGKILLs every process in it and in the namespaces nested in
  it, and no new process can enter it. No process can leave a PID namespace, so children that
  escaped their process group or session (``setsid``, double forks, OpenCode's bash tool) die too.
- The keeper also dies if we die: it has ``--die-with-parent``, and it exits when its pipe from us
  closes, as it does when our process ends in any way. Commands die with the keeper's namespace,
  their bwraps on the host with us (``bubblewrap._KEEPER_ONLY`` and ``monitor_prefix`` say why).

Entering with bwrap rather than ``nsenter`` keeps one code path for root and non-root users (the
user namespace makes the caller root inside, with no capabilities); bwrap drops capabilities,
clears the environment and sets the working directory for each command.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path

from smoldata_tui.sandbox import bubblewrap, owner_lock, processes, registry
from smoldata_tui.sandbox.commands import LocalBgJob, run_to_completion
from smoldata_tui.sandbox.errors import FileTooLarge, SandboxClosed, SandboxError
from smoldata_tui.sandbox.host_files import HostFiles
from smoldata_tui.sandbox.layout import HOME, Layout, materialize, plan_layout
from smoldata_tui.sandbox.protocol import READ_TEXT_LIMIT, ExecResult

KEEPER_SCRIPT = 'trap "" HUP INT QUIT TERM; while read -r _; do :; done'
_JOIN_ATTEMPTS = 3
# What bwrap says when it fails to join the sandbox's PID namespace, before it runs the command
_JOIN_FAILURES = ("bwrap: Can't send pid", "bwrap: Unexpected short read from pid socket")
_START_TIMEOUT_S = 30  # bwrap reports its namespaces within milliseconds; a slow disk may take longer
_STOP_TIMEOUT_S = 10
_log = logging.getLogger(__name__)


def default_base_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "smoldata-tui", "sandboxes")


def _failed_to_join(result: ExecResult) -> bool:
    return result.exit_code == 1 and not result.stdout and result.stderr.startswith(_JOIN_FAILURES)


class LocalSandboxBackend:
    """Creates :class:`LocalSandbox` es. ``opencode_dir`` is a host OpenCode install (with
    ``bin/opencode``); its ``bin`` is bound read-only at ``/root/.opencode/bin``, where opencode_env
    installs OpenCode and looks for it: with it, episodes skip the download. ``binds`` are more read-only
    ``(host_path, sandbox_path)`` pairs. ``link_workdir=False`` leaves ``/root/workdir`` an empty
    directory instead of the link to ``/workdir``: the state the environment's ``extra_setup_shell``
    (``rmdir /root/workdir && ln -s ...``) expects when opencode_env drives the sandbox."""

    def __init__(
        self,
        opencode_dir: Path | str | None = None,
        *,
        binds: list[tuple[Path | str, str]] | tuple[tuple[Path | str, str], ...] = (),
        base_dir: Path | str | None = None,
        bwrap: str | None = None,
        link_workdir: bool = True,
        kill_grace_s: float = 2.0,
    ) -> None:
        all_binds = list(binds)
        if opencode_dir is not None:
            opencode_dir = Path(opencode_dir).expanduser()
            if not (opencode_dir / "bin" / "opencode").is_file():
                raise SandboxError(f"opencode_dir {str(opencode_dir)!r} has no bin/opencode")
            # Only bin/: OpenCode writes into ~/.opencode itself (a .gitignore, plugin packages).
            all_binds.insert(0, (opencode_dir / "bin", f"{HOME}/.opencode/bin"))
        self.base_dir = Path(base_dir) if base_dir is not None else default_base_dir()
        self._layout = plan_layout(all_binds, link_workdir=link_workdir)
        self._bwrap = bwrap
        self._grace_s = kill_grace_s

    def create(
        self,
        *,
        timeout_s: float | None = 900,
        envs: dict[str, str] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> LocalSandbox:
        """A new sandbox, alive until :meth:`LocalSandbox.kill`, interpreter exit, or ``timeout_s``
        seconds (its lifetime, as E2B's ``timeout``; ``None`` or 0: no limit). ``envs`` are set in
        every command; ``metadata`` is kept on the sandbox and in its ``sandbox.json``."""
        bwrap = bubblewrap.find_bwrap(self._bwrap)
        bubblewrap.ensure_usable(bwrap)
        # What a SIGKILLed run left (its files, the endpoint key in its opencode.json) goes now.
        registry.remove_stale(self.base_dir)
        sandbox_id = f"sbx-{secrets.token_hex(6)}"
        control_dir = self.base_dir / sandbox_id
        with registry.new_sandbox_dir(control_dir) as lock:  # its lock, held until kill(), says it lives
            materialize(control_dir / "root", self._layout)
            registry.write_state(control_dir, sandbox_id=sandbox_id, metadata=dict(metadata or {}))
            sandbox = LocalSandbox(
                sandbox_id, control_dir, self._layout, bwrap=bwrap, envs=dict(envs or {}),
                metadata=dict(metadata or {}), grace_s=self._grace_s, lock=lock,
            )  # fmt: skip
        if timeout_s:
            sandbox._expire_after(timeout_s)
        return sandbox

    def remove_stale(self) -> list[str]:
        """Remove the folders of sandboxes whose owner is gone (its lock is free; see registry)."""
        return registry.remove_stale(self.base_dir)


class LocalSandbox:
    """One running sandbox. Thread-safe; every method raises :class:`SandboxClosed` after kill()."""

    def __init__(self, sandbox_id: str, control_dir: Path, layout: Layout, *, bwrap: str,
                 envs: dict[str, str], metadata: dict[str, str], grace_s: float, lock: int) -> None:  # fmt: skip
        self._id = sandbox_id
        self._owner_lock = lock  # released by kill(), or by create() if this constructor fails
        self.control_dir = control_dir
        self.root = control_dir / "root"
        """Host directory that is the sandbox's ``/``."""
        self.metadata = metadata
        self._bwrap = bwrap
        self._env = {**bubblewrap.BASE_ENV, **envs}
        self._grace_s = grace_s
        self._layout_args = layout.bwrap_args(self.root)
        self._files = HostFiles(self.root, layout.mounts)
        self._lock = threading.Lock()
        self._closing = False
        self._dead = threading.Event()
        self._commands: set[subprocess.Popen] = set()  # bwrap processes of exec/start_bg still running
        self._jobs: set[LocalBgJob] = set()
        self._timer: threading.Timer | None = None
        self._job_count = 0
        self._start_keeper()
        registry.register(self)

    def _start_keeper(self) -> None:
        info_read, info_write = os.pipe()
        options = bubblewrap.keeper_options(self._layout_args, hostname=self._id, info_fd=info_write)
        options_fd = bubblewrap.args_fd(options)
        log_path = self.control_dir / "keeper.log"
        with open(log_path, "wb") as log:
            self._keeper = processes.popen(
                [self._bwrap, "--args", str(options_fd), "--", "bash", "-c", KEEPER_SCRIPT],
                pass_fds=(info_write, options_fd), stdin=subprocess.PIPE, stdout=log, stderr=log,
                start_new_session=True, env=bubblewrap.BASE_ENV,
            )  # fmt: skip
        os.close(info_write)
        os.close(options_fd)
        opened: list[int] = []
        try:
            info = bubblewrap.read_info(info_read, _START_TIMEOUT_S)
            if info is None:  # bwrap failed before starting the keeper; it said why
                self._keeper.wait(_STOP_TIMEOUT_S)
                raise bubblewrap.failure_from_stderr(log_path.read_text(errors="replace"))
            self._keeper_pid = int(info["child-pid"])
            try:
                opened.append(os.pidfd_open(self._keeper_pid))
                for namespace in ("user", "pid"):
                    opened.append(os.open(f"/proc/{self._keeper_pid}/ns/{namespace}", os.O_RDONLY | os.O_CLOEXEC))
            except OSError as error:
                raise SandboxError(f"the sandbox's keeper ended while starting: {error}") from None
            self._keeper_pidfd, self._userns_fd, self._pidns_fd = opened
            if os.fstat(self._pidns_fd).st_ino != info["pid-namespace"]:  # its pid was reused already
                raise SandboxError("the sandbox's keeper ended while starting")
            keepers = (self._keeper.pid, self._keeper_pid)
            registry.record_processes(self.control_dir, [(pid, processes.start_time(pid)) for pid in keepers])
        except BaseException:
            for fd in opened:
                os.close(fd)
            self._keeper.kill()
            self._keeper.wait()
            raise

    @property
    def sandbox_id(self) -> str:
        return self._id

    @property
    def alive(self) -> bool:
        return not self._closing

    # -- commands -----------------------------------------------------------------------------

    def exec(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None,
             timeout: float | None = 60) -> ExecResult:  # fmt: skip
        """Run ``cmd`` with bash to completion (see protocol: failures and timeouts are results).

        bwrap can fail to join the sandbox's PID namespace ("Can't send pid", seen under heavy
        load): it then exits before starting ``cmd``, so running it again is safe, and is done.
        """
        attempt = 1
        while True:
            proc = self._spawn(cmd, envs, cwd, own_pid_namespace=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                result = run_to_completion(proc, timeout)
            finally:
                self._forget(proc)
            if attempt == _JOIN_ATTEMPTS or not _failed_to_join(result):
                return result
            time.sleep(0.05 * attempt)
            attempt += 1

    def start_bg(self, cmd: str, *, envs: dict[str, str] | None = None, cwd: str | None = None) -> LocalBgJob:
        """Start ``cmd`` with bash in the background; its output goes to ``job.log_path``."""
        with self._lock:
            self._require_alive()
            self._job_count += 1
            log_path = self.control_dir / "jobs" / f"{self._job_count}.log"
        log_path.parent.mkdir(exist_ok=True)
        for attempt in range(1, _JOIN_ATTEMPTS + 1):
            proc, info = self._start_in_namespace(cmd, envs, cwd, log_path)
            if info is not None or attempt == _JOIN_ATTEMPTS or not self._failed_to_join_bg(proc, log_path):
                break
            self._forget(proc)
            time.sleep(0.05 * attempt)  # bwrap failed before starting ``cmd`` (see exec): started again
        init_pid = int(info["child-pid"]) if info else None
        job = LocalBgJob(proc, init_pid, log_path, self._grace_s, on_exit=lambda job: self._job_ended(job, proc))
        with self._lock:
            killed_meanwhile = self._closing
            if not killed_meanwhile:
                self._jobs.add(job)
        if killed_meanwhile:  # kill() did not see this job: end it here, so its pidfds are released
            job.kill()
            self._require_alive()
        return job

    def _start_in_namespace(self, cmd: str, envs: dict[str, str] | None, cwd: str | None,
                            log_path: Path) -> tuple[subprocess.Popen, dict | None]:  # fmt: skip
        """Start ``cmd`` in a PID namespace of its own; bwrap's report of it (None: bwrap failed)."""
        info_read, info_write = os.pipe()
        try:
            with open(log_path, "wb") as log:
                proc = self._spawn(cmd, envs, cwd, own_pid_namespace=True, stdout=log, stderr=log, info_fd=info_write)
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
        try:
            return proc, bubblewrap.read_info(info_read, _START_TIMEOUT_S)
        except BaseException:
            proc.kill()
            self._forget(proc)
            raise

    @staticmethod
    def _failed_to_join_bg(proc: subprocess.Popen, log_path: Path) -> bool:
        try:
            code = proc.wait(timeout=_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return False
        with open(log_path, "rb") as log:
            said = log.read(4096).decode(errors="replace")
        return _failed_to_join(ExecResult(code, "", said))

    def _spawn(self, cmd: str, envs: dict[str, str] | None, cwd: str | None, *, own_pid_namespace: bool,
               info_fd: int | None = None, **streams) -> subprocess.Popen:  # fmt: skip
        env = {**self._env, **(envs or {})}
        with self._lock:  # held while the namespace fds are handed over, so kill() cannot close them
            self._require_alive()
            options = bubblewrap.command_options(
                self._layout_args, userns_fd=self._userns_fd, pidns_fd=self._pidns_fd, hostname=self._id,
                env=env, cwd=cwd or env.get("HOME", HOME), own_pid_namespace=own_pid_namespace, info_fd=info_fd,
            )  # fmt: skip
            options_fd = bubblewrap.args_fd(options)
            passed = (self._userns_fd, self._pidns_fd, options_fd) + (() if info_fd is None else (info_fd,))
            try:
                proc = processes.popen(
                    [*bubblewrap.monitor_prefix(), self._bwrap, "--args", str(options_fd), "--", "bash", "-c", cmd],
                    pass_fds=passed, stdin=subprocess.DEVNULL, start_new_session=True,
                    env=bubblewrap.BASE_ENV, **streams,
                )  # fmt: skip
            finally:
                os.close(options_fd)
            self._commands.add(proc)
        return proc

    def _forget(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._commands.discard(proc)

    def _job_ended(self, job: LocalBgJob, proc: subprocess.Popen) -> None:
        with self._lock:
            self._jobs.discard(job)
            self._commands.discard(proc)

    # -- files --------------------------------------------------------------------------------

    def write_text(self, path: str, content: str) -> None:
        self.write_bytes(path, content.encode("utf-8"))

    def read_text(self, path: str) -> str:
        """Strict UTF-8, like ``bytes.decode()``: invalid bytes raise UnicodeDecodeError (a
        ValueError), which is what the trace engine assumes the environment's backend does.
        Past :data:`READ_TEXT_LIMIT` bytes, :class:`FileTooLarge` (and at most that much read)."""
        data = self.read_bytes(path, 0, READ_TEXT_LIMIT + 1)
        if len(data) > READ_TEXT_LIMIT:
            raise FileTooLarge(path, self.size(path) or len(data), READ_TEXT_LIMIT)
        return data.decode("utf-8")

    def exists(self, path: str) -> bool:
        self._require_alive()
        return self._files.exists(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path``, creating missing parent directories."""
        self._require_alive()
        self._files.write_bytes(path, data)

    def read_bytes(self, path: str, offset: int = 0, limit: int | None = None) -> bytes:
        """At most ``limit`` bytes from ``offset`` on (``b""`` past the end), read on the host."""
        self._require_alive()
        return self._files.read_bytes(path, offset, limit)

    def size(self, path: str) -> int | None:
        self._require_alive()
        return self._files.size(path)

    # -- lifetime -----------------------------------------------------------------------------

    def kill(self) -> None:
        """End every process of the sandbox (TERM, grace, KILL), wait for them, remove the sandbox's
        directory. Idempotent and callable from any thread: a second caller returns once it is done."""
        with self._lock:
            first, self._closing = not self._closing, True
        if not first:
            self._dead.wait()
            return
        try:
            if self._timer is not None:
                self._timer.cancel()
            self._end_processes()
        finally:
            for fd in (self._keeper_pidfd, self._userns_fd, self._pidns_fd):
                os.close(fd)
            try:
                registry.remove_dir(self.control_dir)
            finally:
                owner_lock.release(self._owner_lock)  # a folder left now is a leftover for the next sweep
                registry.unregister(self)
                self._dead.set()

    def _end_processes(self) -> None:
        with self._lock:
            commands, jobs = set(self._commands), set(self._jobs)
        roots = {self._keeper.pid} | {proc.pid for proc in commands}
        helpers = roots | {job.init_pid for job in jobs if job.init_pid} | {self._keeper_pid}
        processes.end_tree(roots, helpers, self._grace_s, self._kill_keeper)
        self._keeper.stdin.close()
        # The keeper's exit completes only once every process of its namespace is gone.
        try:
            self._keeper.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # e.g. a bwrap of ours was SIGSTOPped: force the rest
            _log.warning("sandbox %s: the keeper did not exit in %s s", self._id, _STOP_TIMEOUT_S)
        # The bwrap processes of commands are monitors now (their sandboxed side is dead); a job's
        # bwrap would wait forever for a status its killed init never sends.
        for proc in [self._keeper, *commands]:
            proc.kill()
            proc.wait()
        for job in jobs:
            job.wait()  # reaped already: this releases its pidfds

    def _kill_keeper(self) -> None:
        processes.signal_pidfd(self._keeper_pidfd, signal.SIGKILL)

    def _expire_after(self, seconds: float) -> None:
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.name = f"sandbox-lifetime-{self._id}"
        self._timer.start()

    def _expire(self) -> None:
        try:
            self.kill()
        except Exception:  # a timer thread has no caller to raise to
            _log.exception("could not kill sandbox %s at the end of its lifetime", self._id)

    def _require_alive(self) -> None:
        if self._closing:
            raise SandboxClosed(f"sandbox {self._id} has been killed")

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.kill()

    def __repr__(self) -> str:
        return f"<LocalSandbox {self._id} {'alive' if self.alive else 'killed'} root={self.root}>"
