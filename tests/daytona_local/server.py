"""``LocalDaytona``: enough of Daytona's control plane and toolbox on 127.0.0.1 for the real
``daytona`` SDK to create sandboxes, run commands, stream logs and move files, with every command
executed for real in a local bubblewrap sandbox, and with faults on demand.

The server runs on its own event loop in its own thread, so synchronous tests and other event loops
(the SDK's, Textual's) can use it. Blocking sandbox calls run in a thread pool, never on that loop.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Self

from aiohttp import web

from smoldata_tui.opencode.plugin_deps import ensure_plugin_deps, home_binds
from smoldata_tui.sandbox.host_python import host_python_binds
from smoldata_tui.sandbox import LocalSandboxBackend
from tests.daytona_local import builds, control_plane, toolbox, toolbox_files
from tests.daytona_local.builds import Builds
from tests.daytona_local.faults import DROPPED, KILLED, Faults, Pattern, make_middleware
from tests.daytona_local.state import SandboxRecord, ServerState

DEFAULT_IMAGES_WITH_OPENCODE = frozenset({"docker.io/savatar101/env-data-agent-train:base"})
# What a sandbox's image has besides this host's system (image_kinds): "plain" is a plain Debian
# image, its own externally managed /usr/bin/python3 and nothing else (no host Python, no openenv,
# no `python`); "no-python" is that without any Python. Images not named get the host's Python.
IMAGE_KINDS = ("plain", "no-python")
SANDBOX_HOME = "/root"  # the environment's sandbox_home
OPENCODE_BIN = f"{SANDBOX_HOME}/.opencode/bin"  # where opencode_env installs OpenCode and looks for it
_START_TIMEOUT_S = 10
_SHUTDOWN_TIMEOUT_S = 5  # handlers still running at stop (a followed log) get this long to finish
_POOL_THREADS = 32  # sandbox creates, kills, execs and file reads in flight at once


class LocalDaytona:
    def __init__(
        self,
        opencode_bin_dir: Path | str | None = None,
        images_with_opencode: set[str] | frozenset[str] = DEFAULT_IMAGES_WITH_OPENCODE,
        sandbox_base_dir: Path | str | None = None,
        build_seconds: float = 0.0,
        image_kinds: dict[str, str] | None = None,
    ) -> None:
        self.opencode_bin_dir = Path(opencode_bin_dir) if opencode_bin_dir is not None else None
        # An image with OpenCode also has OpenCode's plugin package in its config folders, as one whose
        # build started OpenCode once would: its sandboxes skip the npm install OpenCode makes in a
        # fresh home (~10 s of CPU each, on this machine). OpenCode's cache holds it per version.
        self.plugin_deps = (ensure_plugin_deps(self.opencode_bin_dir.parent.name, cache_dir=self.opencode_bin_dir.parents[1])
                            if self.opencode_bin_dir is not None else None)  # fmt: skip
        self.images_with_opencode = set(images_with_opencode)
        self.image_kinds = dict(image_kinds or {})
        if not set(self.image_kinds.values()) <= set(IMAGE_KINDS):
            raise ValueError(f"image kinds are {', '.join(IMAGE_KINDS)}, not {sorted(self.image_kinds.values())}")
        self.sandbox_base_dir = Path(sandbox_base_dir) if sandbox_base_dir is not None else None
        self.api_key = secrets.token_urlsafe(24)
        self.state = ServerState()
        self.faults = Faults()
        self.builds = Builds(self.state.lock)
        self.builds.configure(build_seconds, None)
        self._background: set[asyncio.Task] = set()  # touched on the loop only
        self.open_log_sockets: set[asyncio.BaseTransport] = set()  # touched on the loop only
        self.port: int | None = None
        self._backends: dict[tuple[bool, str | None], LocalSandboxBackend] = {}
        self._no_python_dir: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.stopping: asyncio.Event | None = None  # set on the loop when stop() begins
        self._pool = ThreadPoolExecutor(max_workers=_POOL_THREADS, thread_name_prefix="daytona-local")
        self._stop_lock = threading.Lock()
        self._stopped = False

    # -- lifetime ---------------------------------------------------------------------------

    def start(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="daytona-local-server", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(_START_TIMEOUT_S)
        return self

    def stop(self) -> None:
        """Kill every sandbox still alive, then stop the server. Idempotent."""
        with self._stop_lock:
            if self._stopped or self._loop is None:
                self._stopped = True
                return
            self._stopped = True
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()
            self._pool.shutdown(wait=True)
            if self._no_python_dir is not None:
                shutil.rmtree(self._no_python_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        self.stopping = asyncio.Event()
        app = web.Application(middlewares=[make_middleware(self.state, self.faults, self.api_key)],
                              client_max_size=1 << 30)  # fmt: skip
        control_plane.add_routes(app, self)
        toolbox.add_routes(app, self)
        toolbox_files.add_routes(app, self)
        builds.add_routes(app, self)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=_SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _shutdown(self) -> None:
        self.stopping.set()
        records = self.state.all()
        for record in records:
            self.state.remove(record.id)
        # Killing first ends the commands that followed logs and waiting execs are bound to.
        await asyncio.gather(*(self.kill_local(record) for record in records))
        await asyncio.gather(*self._background)  # sandboxes still building: each kills its own
        await self._runner.cleanup()

    # -- what the routes use ----------------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def toolbox_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/toolbox"

    def backend(self, with_opencode: bool, kind: str | None = None) -> LocalSandboxBackend:
        """The backend for a new sandbox: with OpenCode bound read-only where opencode_env looks for
        it when the sandbox's image (or snapshot) would have it preinstalled. An image does not link
        /root/workdir to /workdir: the environment's own setup does that, as it must in Daytona.
        ``kind`` (an ``IMAGE_KINDS`` name) None: the host's Python is bound in as well."""
        with_opencode = with_opencode and self.opencode_bin_dir is not None
        with self.state.lock:
            if (with_opencode, kind) not in self._backends:
                binds = [(self.opencode_bin_dir, OPENCODE_BIN)] if with_opencode else []
                if with_opencode and self.plugin_deps is not None:
                    binds += home_binds(self.plugin_deps, SANDBOX_HOME)
                if kind is None:
                    binds += host_python_binds()
                elif kind == "no-python":  # its PATH has /usr/bin's commands but python*: none is found
                    binds.append((self._commands_without_python(), control_plane.NO_PYTHON_BIN))
                self._backends[(with_opencode, kind)] = LocalSandboxBackend(
                    binds=binds, base_dir=self.sandbox_base_dir, link_workdir=False
                )
            return self._backends[(with_opencode, kind)]

    def _commands_without_python(self) -> Path:
        """A host folder of links to every command in /usr/bin but python*, made once, removed at stop."""
        if self._no_python_dir is None:
            self._no_python_dir = Path(tempfile.mkdtemp(prefix="daytona-local-no-python-"))
            for command in Path("/usr/bin").iterdir():
                if not command.name.startswith("python"):
                    (self._no_python_dir / command.name).symlink_to(command)
        return self._no_python_dir

    async def run_blocking(self, function, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, functools.partial(function, *args, **kwargs)
        )

    def in_background(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def kill_local(self, record: SandboxRecord) -> None:
        if record.local is not None:
            await self.run_blocking(record.local.kill)

    def _abort_log_sockets(self) -> None:
        for transport in list(self.open_log_sockets):
            transport.abort()  # no close frame: the client sees code 1006

    # -- for tests --------------------------------------------------------------------------

    def sandbox_ids(self) -> list[str]:
        return [record.id for record in self.state.all()]

    def sandbox_json(self, sandbox_id: str) -> dict[str, Any]:
        return self.state.snapshot_json(sandbox_id)

    def create_params(self, sandbox_id: str) -> dict[str, Any]:
        """The raw body of the POST /sandbox that created the sandbox (kept after deletion)."""
        with self.state.lock:
            return copy.deepcopy(self.state.create_params[sandbox_id])

    @property
    def requests(self) -> list[tuple[str, str, int]]:
        with self.state.lock:
            return list(self.state.requests)

    def bytes_sent(self, sandbox_id: str | None = None) -> int:
        with self.state.lock:
            return self.state.bytes_total if sandbox_id is None else self.state.bytes_by_sandbox.get(sandbox_id, 0)

    def local_sandbox(self, sandbox_id: str):
        """The LocalSandbox behind a Daytona sandbox, for tests that look inside it."""
        return self.state.find(sandbox_id).local

    # -- faults -----------------------------------------------------------------------------

    def fail_next(self, count: int, status: int = 503, *, path_contains: str = "", method: str | None = None,
                  body_contains: str | None = None) -> None:  # fmt: skip
        """The next ``count`` matching requests get ``status`` with a Daytona error body, unexecuted.
        ``body_contains``: only JSON requests whose body contains it (``"opencode export"``)."""
        with self.faults.lock:
            self.faults.fail_next(count, status, path_contains, method, _encoded(body_contains))

    def drop_answer_next(self, count: int, *, path_contains: str = "", method: str | None = None,
                         body_contains: str | None = None) -> None:  # fmt: skip
        """The next ``count`` matching requests run, then lose their connection before the answer:
        the client cannot tell whether they ran."""
        with self.faults.lock:
            self.faults.fail_next(count, DROPPED, path_contains, method, _encoded(body_contains))

    def kill_command_next(self, count: int, *, body_contains: str) -> None:
        """The next ``count`` commands (``process/execute``) whose request contains ``body_contains``
        are answered as a loaded sandbox answers a command whose shell it killed: exit 137, nothing
        printed. They do not run."""
        with self.faults.lock:
            self.faults.fail_next(count, KILLED, "process/execute", "POST", _encoded(body_contains))

    def fail_every(self, every: int, status: int = 503, *, path_contains: str = "/toolbox/") -> None:
        """From now on every ``every``-th request whose path contains ``path_contains`` (all toolbox
        requests by default: commands, sessions, uploads, downloads) gets ``status``, unexecuted."""
        with self.faults.lock:
            self.faults.patterns.append(Pattern(status, every=every, path_contains=path_contains))

    def fail_first_of_each_kind(self, status: int = 503) -> None:
        """From now on the first request of each kind (method and route: create, get, exec, session
        exec, upload, download, ...) gets ``status``, unexecuted; later ones of that kind run."""
        with self.faults.lock:
            self.faults.patterns.append(Pattern(status, first_of_each_kind=True))

    def drop_connections(self, seconds: float) -> None:
        """For ``seconds``, abort every request's connection without an answer, and abort the open log
        WebSockets without a close frame. Commands in the sandboxes keep running."""
        self.faults.drop_until = time.monotonic() + seconds
        if self._loop is not None and not self._stopped:
            self._loop.call_soon_threadsafe(self._abort_log_sockets)

    def set_state(self, sandbox_id: str, state: str, reason: str | None = None) -> None:
        record = self.state.find(sandbox_id)
        if record is None:
            raise KeyError(sandbox_id)
        with self.state.lock:
            record.set_state(state, reason)

    def auto_stop(self, sandbox_id: str) -> None:
        """Stop the sandbox now, as Daytona's inactivity auto-stop would (deleting it when its
        ``autoDeleteInterval`` is 0, as ours are)."""
        record = self.state.find(sandbox_id)
        if record is None:
            raise KeyError(sandbox_id)
        asyncio.run_coroutine_threadsafe(control_plane.stop_sandbox(self, record), self._loop).result()

    def build_image_on_create(self, seconds: float, lines: list[str] | None = None) -> None:
        """From now on, a sandbox created from an image this server has not built yet answers
        ``pending_build``, is ``building_snapshot`` for ``seconds`` from its create while its build log
        (``GET /api/sandbox/{id}/build-logs-url``, then that URL) gets ``lines`` evenly over that time,
        then ``started``. Creates from that image afterwards start at once (the build is cached); one
        created while it builds waits for the same build. Snapshots never build. ``lines`` None: a
        step per Dockerfile line. ``seconds`` 0 turns it off (creates then build and cache nothing)."""
        self.builds.configure(seconds, lines)

    def image_builds(self) -> list[str | None]:
        """The image (its FROM) of every build simulated so far, oldest first."""
        return self.builds.images()

    def create_delay(self, seconds: float) -> None:
        """Every later POST /sandbox answers ``seconds`` late (the sandbox exists meanwhile)."""
        self.faults.create_delay_s = seconds


def _encoded(text: str | None) -> bytes | None:
    return None if text is None else text.encode()
