"""One episode, end to end: the steps the environment takes, in a sandbox we own.

install OpenCode → create sandbox → stage task → agent running → recover calls → grading (a
remote sandbox is created before OpenCode is looked for in it), then save (trace + metadata, no secrets) and release the sandbox on every path: normal end,
error, cancel, timeout, Ctrl-C. The agent's log is followed by new bytes only and written to
the episode's trace file as it arrives, so a crash of ours loses nothing already received
and the viewer can follow the same file.

The built-in driver reproduces what opencode_env does in the environment's configuration
(opencode.json from :mod:`opencode_config`, the agent's shell line, HOME ``/root``); with
``--harness opencode-env``, opencode_env's own factory sets the sandbox up and starts the agent
(:mod:`opencode_env_harness`), and everything after that is shared.
Blocking by design: the app runs :meth:`Episode.run` in a worker thread and calls
:meth:`Episode.cancel` from the UI thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from smoldata_tui.session.episode_agent import follow_agent, recover_calls
from smoldata_tui.session.episode_outcome import note_release_failure, save_outcome
from smoldata_tui.session.episode_spec import (  # noqa: F401 - re-exported: the screens import them from here
    BACKENDS,
    CAPTURE_STAGE,
    OPENCODE_ENV_STAGES,
    REMOTE_STAGES,
    STAGES,
    EpisodeFailed,
    EpisodeObserver,
    EpisodeResult,
    EpisodeSpec,
    new_run_dir,
    now_utc,
    stages_for,
)
from smoldata_tui.session.capture_link import (
    capture_not_running,
    finish_capture,
    opencode_version_in,
    require_reachable,
    start_capture,
)
from smoldata_tui.session.log_follower import LogFollower
from smoldata_tui.store.metadata import PROMPT_CAP, EpisodeMetadata, metadata_path_for
from smoldata_tui.store.metadata_writer import save_metadata
from smoldata_tui.store.owner import hold_run_lock, owner_record
from smoldata_tui.opencode.config import (
    agent_command,
    agent_environment,
    agent_log_path,
    build_opencode_json,
    config_path,
    instruction_path,
    opencode_json_text,
    setup_shell,
)
from smoldata_tui.masking import masked_config
from smoldata_tui.opencode.plugin_deps import ensure_plugin_deps
from smoldata_tui.opencode.install import checked_version, resolve_opencode
from smoldata_tui.session.opencode_env_harness import (
    HarnessUnavailable,
    ImageLikeBackend,
    agent_job,
    environment_config,
    create_starts_agent,
    image_like_command,
    open_session,
    require_opencode_env,
)
from smoldata_tui.session.placement import (
    HOME,
    create_daytona,
    create_local,
    create_local_like_image,
    place_opencode,
    sandbox_record,
)
from smoldata_tui.masking import SecretScrubber
from smoldata_tui.tasks import GradeResult, grade_answer, stage_task
from smoldata_tui.tasks.grade import to_verify_result
from smoldata_tui.tasks.stage import DEFAULT_PULL_TIMEOUT_S
from smoldata_tui.trace.text import clip

# --timeout bounds the whole episode; once it has run out, recovering calls and grading still get
# this long (at least), so an agent stopped at the deadline is graded as the environment grades it.
GRADE_FLOOR_S = 30.0


class Episode:
    def __init__(self, spec: EpisodeSpec, observer: EpisodeObserver) -> None:
        self.spec = spec
        self.observer = observer
        self._cancel = threading.Event()
        self._stop_reason: str | None = None
        self._deadline = float("inf")  # set when the run starts: start + spec.timeout_s
        self._timed_out = False
        self._sandbox = None
        self._session = None  # opencode_env's OpenCodeSession, with --harness opencode-env
        self._staged: int | None = None  # files staged before opencode_env started the agent
        self._opencode = "opencode"  # how the agent command names the binary inside the sandbox
        self._opencode_version: str | None = None  # its --version, when placing it asked already
        self.run_dir: Path | None = None
        endpoint = spec.endpoint
        # OpenCode reads the key from here, inside the sandbox; saved metadata gets it redacted.
        self._opencode_json = build_opencode_json(endpoint.base_url, endpoint.api_key, endpoint.model)
        self._scrubber = SecretScrubber(endpoint.secrets)
        self._capture = None  # the capture proxy between OpenCode and the model (built-in harness)
        self._cancelled_calls: list[dict] = []  # shell-tool commands ended by cancel_running_calls
        self.capture_level: str | None = None  # "tokens", "logprobs" or "text" once the probe settled it
        if self._captures:
            from smoldata_tui.training.capture import prefetch

            prefetch()  # openenv's import takes seconds: overlap it with the sandbox's creation

    @property
    def _captures(self) -> bool:
        return self.spec.capture and self.spec.harness != "opencode-env"

    def cancel(self, reason: str | None = None) -> None:
        """Stop the agent, keep what was received, grade nothing, release the sandbox. ``reason``
        (the first one given) is saved as the metadata's ``stop_reason``."""
        self._stop_reason = self._stop_reason or reason
        self._cancel.set()
        interrupt = getattr(self._sandbox, "interrupt", None)
        if interrupt is not None:
            interrupt.set()  # a remote wait on the agent returns now instead of at its next poll

    def scrub(self, text: str) -> str:
        """``text`` with the episode's secrets masked (its key, its capture session), to show it."""
        return self._scrubber.text(text)

    def cancel_running_calls(self) -> list:
        """End the shell-tool commands the agent is running now (a hung call): OpenCode's tool
        returns with the signal's exit status and the agent goes on. Each is recorded in
        ``run.meta.json``'s ``cancelled_calls``. Returns what was ended ([] when nothing ran)."""
        from smoldata_tui.session.sandbox_processes import end_commands, probe_sandbox

        sandbox = self._sandbox
        # one bash ran in its own place cannot be ended so that OpenCode notices (RunningCommand.in_shell)
        commands = [command for command in probe_sandbox(sandbox) if command.in_shell] if sandbox is not None else []
        if not commands:
            return []
        end_commands(sandbox, commands)
        for command in commands:
            self._cancelled_calls.append({"command": clip(self._scrubber.text(command.command), 2000),
                                          "ran_s": command.seconds, "at": now_utc()})  # fmt: skip
        return commands

    # --- the run ----------------------------------------------------------------------------
    def run(self) -> EpisodeResult:
        spec = self.spec
        self._deadline = time.monotonic() + spec.timeout_s
        self.run_dir = new_run_dir(Path(spec.save_dir), spec.task.name, spec.run_name)
        trace_path = self.run_dir / "run.jsonl"
        trace_path.touch()
        run_lock = hold_run_lock(trace_path)  # before the metadata says running: readers probe it
        try:
            return self._run_locked(trace_path, locked=run_lock is not None)
        finally:
            if run_lock is not None:
                run_lock.release()  # after the outcome is saved: the file is gone once the run is

    def _run_locked(self, trace_path: Path, *, locked: bool) -> EpisodeResult:
        spec = self.spec
        metadata = EpisodeMetadata(
            task=spec.task.name,
            backend=spec.backend,
            model=spec.endpoint.label,
            harness=spec.harness,
            opencode_version=spec.opencode_version,
            started_at=now_utc(),
            status="running",
            owner=owner_record(locked=locked),  # a reader that finds it running with its owner gone says interrupted
            trace=trace_path.name,
            config=masked_config(self._opencode_json),
            prompt=spec.task.instruction[:PROMPT_CAP],
            fork=spec.endpoint.fork,
        )
        meta_path = metadata_path_for(trace_path)
        save_metadata(meta_path, metadata, scrub=self._scrubber.text)
        self.observer.opened(trace_path)
        result = EpisodeResult(trace_path, meta_path, metadata, status="running")
        try:
            self._run_stages(result)
        except EpisodeFailed as failure:
            result.error = failure
            timed_out = self._timed_out or time.monotonic() > self._deadline
            result.status = "cancelled" if self._cancel.is_set() else "timeout" if timed_out else "error"
        except KeyboardInterrupt:
            result.status = "cancelled"
            raise
        finally:
            self._release(result)
        return result

    def _run_stages(self, result: EpisodeResult) -> None:
        spec = self.spec
        metadata = {"app": "smoldata-tui", "task": spec.task.name, "run": self.run_dir.name}
        if spec.harness == "opencode-env":
            self._open_with_opencode_env(result, metadata)
        elif spec.backend == "local":
            with self._stage("install OpenCode", result) as say:
                binary = resolve_opencode(spec.opencode_bin, spec.opencode_version, progress=say)
                self._opencode_version = checked_version(binary)  # the file bound into the sandbox, asked once
                deps = ensure_plugin_deps(self._opencode_version, progress=say) if self._opencode_version else None
            # A host-side, first-use install (npm, minutes) is not part of the episode's time.
            self._deadline = time.monotonic() + spec.timeout_s
            with self._stage("create sandbox", result):
                self._sandbox, self._opencode = create_local(binary, timeout_s=spec.timeout_s, metadata=metadata,
                                                             plugin_deps=deps)  # fmt: skip
                result.metadata.sandbox = sandbox_record(self._sandbox)
        elif spec.backend == "daytona":
            with self._stage("create sandbox", result) as say:
                self._sandbox = create_daytona(spec.daytona, timeout_s=spec.timeout_s, metadata=metadata,
                                               progress=say, cancel=self._cancel)  # fmt: skip
                result.metadata.sandbox = sandbox_record(self._sandbox)
            with self._stage("install OpenCode", result) as say:
                self._opencode, self._opencode_version = place_opencode(self._sandbox, version=spec.opencode_version,
                                                opencode_bin=spec.opencode_bin, progress=say)  # fmt: skip
        else:
            raise EpisodeFailed("create sandbox", f"unknown backend {spec.backend!r} (use {' or '.join(BACKENDS)})")
        if self._captures:
            with self._stage(CAPTURE_STAGE, result) as say:
                self._start_capture(result, say)
        with self._stage("stage task", result) as say:
            files = self._staged if self._staged is not None else stage_task(
                self._sandbox, spec.task, progress=say, cancel=self._cancel,
                pull_timeout_s=min(DEFAULT_PULL_TIMEOUT_S, max(1.0, self._deadline - time.monotonic())))
            say(f"{files} input file{'s' if files != 1 else ''} in /home/user/input")
            if self._session is None:  # opencode_env wrote its own
                self._write_agent_files()
                # Asked where the binary was placed (each start of OpenCode costs ~2 s of CPU), else here.
                result.metadata.sandbox["opencode_version"] = (self._opencode_version
                                                               or opencode_version_in(self._sandbox, HOME, self._opencode))
        with self._stage("agent running", result) as say:
            self._run_agent(result, say)
        with self._stage("recover calls", result) as say:
            recover_calls(result, say, session=self._session, sandbox=self._sandbox, opencode=self._opencode,
                          scrub=self._scrubber.text)  # fmt: skip
        if self._cancel.is_set():
            self.observer.stage("grading", "skipped", 0.0, "cancelled: not graded")
            return
        with self._stage("grading", result) as say:
            timeout = min(spec.task.grader_timeout_s, max(self._deadline - time.monotonic(), GRADE_FLOOR_S))
            result.grade = grade_answer(self._sandbox, spec.task, timeout=timeout, scrub_secrets=spec.endpoint.secrets,
                                        cancel=self._cancel)  # fmt: skip
            if self._cancel.is_set():  # the grader was stopped: no grade
                result.grade = None
                raise EpisodeFailed("grading", "cancelled")
            say(_grade_line(result.grade))

    def _open_with_opencode_env(self, result: EpisodeResult, metadata: dict[str, str]) -> None:
        """opencode_env's factory sets the sandbox up; each sandbox it asks for is made (and
        tracked, for release) inside the "create sandbox" stage."""
        spec, endpoint = self.spec, self.spec.endpoint
        try:
            require_opencode_env()
        except HarnessUnavailable as exc:
            raise EpisodeFailed("opencode_env setup", str(exc)) from None

        def create_sandbox(timeout_s, _envs, _metadata):
            self._kill_sandbox()  # a retry: opencode_env killed the last one, but never twice is cheap
            with self._stage("create sandbox", result) as say:
                if spec.backend == "local":
                    binary = resolve_opencode(spec.opencode_bin, spec.opencode_version, progress=say)
                    self._sandbox = create_local_like_image(binary, timeout_s=timeout_s, metadata=metadata)
                else:
                    self._sandbox = create_daytona(spec.daytona, timeout_s=spec.timeout_s, metadata=metadata,
                                                   progress=say, cancel=self._cancel)  # fmt: skip
                try:
                    if spec.backend != "local":
                        place_opencode(self._sandbox, version=spec.opencode_version, opencode_bin=spec.opencode_bin,
                                       progress=say)  # fmt: skip
                    prepared = self._sandbox.exec(image_like_command(), timeout=60)
                    if prepared.exit_code != 0:
                        raise RuntimeError(f"preparing the sandbox for opencode_env failed: {(prepared.stderr or prepared.stdout).strip()[:300]}")
                    if create_starts_agent():  # published opencode_env starts the agent inside create()
                        self._staged = stage_task(self._sandbox, spec.task, progress=say, cancel=self._cancel)
                except BaseException:
                    self._kill_sandbox()  # opencode_env never saw it: nobody else would release it
                    raise
                result.metadata.sandbox = sandbox_record(self._sandbox)
            return self._sandbox

        config = environment_config(base_url=endpoint.base_url, api_key=endpoint.api_key, model=endpoint.model,
                                    opencode_version=spec.opencode_version, agent_timeout_s=spec.timeout_s)  # fmt: skip
        result.metadata.config = masked_config(config.model_dump())

        def verify(sandbox, _task):  # the environment's verifier; the runner grades with the same code
            return to_verify_result(grade_answer(sandbox, spec.task, scrub_secrets=endpoint.secrets))

        with self._stage("opencode_env setup", result) as say:
            say("opencode_env: sandbox, install check, opencode.json, setup shell, logging proxy")
            self._session = open_session(config, ImageLikeBackend(create_sandbox), verify,
                                         instruction=spec.task.instruction, folder=str(spec.task.folder))  # fmt: skip

    def _start_capture(self, result: EpisodeResult, say: Callable[[str], None]) -> None:
        """OpenCode talks to the capture proxy, with the session id as its key. A local sandbox's
        proxy runs here (the endpoint's key stays on the host); a remote sandbox cannot reach this
        host, so its proxy runs inside it."""
        endpoint, remote = self.spec.endpoint, self.spec.backend == "daytona"
        self._capture = start_capture(endpoint, result.trace_path, say, sandbox=self._sandbox if remote else None,
                                      cancel=self._cancel, deadline=self._deadline, sampling=self.spec.sampling,
                                      scrub=lambda text: self._scrubber.text(text),
                                      context_window=self.spec.context_window)  # fmt: skip
        if not remote:
            require_reachable(self._sandbox, self._capture)
        self._scrubber = SecretScrubber([*endpoint.secrets, self._capture.session_id])
        self._opencode_json = build_opencode_json(self._capture.base_url, self._capture.session_id, endpoint.model,
                                                  proxy_restores_model=True)  # openenv's CaptureServer restores the name
        result.metadata.config = masked_config(self._opencode_json)
        result.metadata.capture = self._capture.record.to_json()
        self.capture_level = self._capture.record.level

    def _write_agent_files(self) -> None:
        spec, sandbox = self.spec, self._sandbox
        sandbox.write_text(config_path(HOME), opencode_json_text(self._opencode_json))
        sandbox.write_text(instruction_path(HOME), spec.task.instruction)
        prepared = sandbox.exec(f"{setup_shell(HOME)} && : > {agent_log_path(HOME)}", timeout=60)
        if prepared.exit_code != 0:
            raise EpisodeFailed("stage task", f"preparing the agent's folders failed: {(prepared.stderr or prepared.stdout).strip()[:300]}")

    def _run_agent(self, result: EpisodeResult, say: Callable[[str], None]) -> None:
        sandbox = self._sandbox
        if self._session is not None:
            self._session.start_agent()
            job = agent_job(self._session)
        else:
            job = sandbox.start_bg(agent_command(HOME, opencode=self._opencode), envs=agent_environment(HOME))
        follower = LogFollower(sandbox, agent_log_path(HOME), result.trace_path, self.observer.received, self._scrubber)
        follow_agent(sandbox, job, follower, result, say, cancel=self._cancel, deadline=lambda: self._deadline)

    # --- bookkeeping ------------------------------------------------------------------------
    @contextmanager
    def _stage(self, name: str, result: EpisodeResult) -> Iterator[Callable[[str], None]]:
        started = time.monotonic()
        observer = self.observer

        def say(message: str) -> None:
            observer.stage(name, "progress", time.monotonic() - started, clip(self._scrubber.text(message), 300))

        if self._cancel.is_set() and name != "recover calls":
            raise EpisodeFailed(name, "cancelled")
        if time.monotonic() > self._deadline and name not in ("recover calls", "grading"):
            self._timed_out = True
            raise EpisodeFailed(name, f"timeout: --timeout {self.spec.timeout_s:g} s ran out before {name}")
        if hasattr(self._sandbox, "notify"):
            self._sandbox.notify = say  # retries of remote calls show in this stage's log
        observer.stage(name, "started", 0.0)
        try:
            yield say
        except EpisodeFailed:
            observer.stage(name, "failed", time.monotonic() - started, "")
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes one clear line
            message = clip(self._scrubber.text(f"{type(exc).__name__}: {exc}"), 500)
            observer.stage(name, "failed", time.monotonic() - started, message)
            raise EpisodeFailed(name, message) from exc
        finally:
            result.metadata.timings[name] = round(time.monotonic() - started, 3)
        observer.stage(name, "done", time.monotonic() - started)

    def _kill_sandbox(self) -> str | None:
        """Release the sandbox; what went wrong, when it could not be (its folder may hold the key)."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            try:
                sandbox.kill()
            except Exception as exc:  # noqa: BLE001 - report, never mask the episode's outcome
                message = clip(self._scrubber.text(f"{type(exc).__name__}: {exc}"), 300)
                self.observer.stage("release sandbox", "failed", 0.0, message)
                return message
        return None

    def _release(self, result: EpisodeResult) -> None:
        session, self._session = self._session, None
        if session is not None:
            try:
                session.close()  # opencode_env ends the agent, its proxy and the sandbox
            except Exception as exc:  # noqa: BLE001 - the sandbox is killed below anyway
                self.observer.stage("release sandbox", "failed", 0.0, clip(self._scrubber.text(f"opencode_env close: {exc}"), 300))
        capture, self._capture = self._capture, None
        if capture is not None:
            say = lambda message: self.observer.stage("capture proxy", "progress", 0.0, clip(self._scrubber.text(message), 300))  # noqa: E731
            result.metadata.capture = finish_capture(capture, result.trace_path, self._scrubber.text, say)
        elif self._captures:  # asked for, but no proxy ran: failed, or never started
            result.metadata.capture = capture_not_running(result.error, "sandbox" if self.spec.backend == "daytona" else "host")
        elif self.spec.harness != "opencode-env":
            result.metadata.capture = {"enabled": False}
        release_failed = self._kill_sandbox()
        if release_failed is not None:
            note_release_failure(result, release_failed)
        # A divergence quotes tool results as they are now: the agent may have printed the key.
        result.divergences = [json.loads(self._scrubber.text(json.dumps(item, default=str)))
                              for item in self.spec.endpoint.divergences()]  # fmt: skip
        self.spec.endpoint.close()
        result.metadata.cancelled_calls = list(self._cancelled_calls)
        save_outcome(result, self._stop_reason if self._cancel.is_set() else None, self._scrubber.text)


def _grade_line(grade: GradeResult) -> str:
    if grade.grader_error:
        return f"grader failed: {grade.grader_error}"
    return f"env_reward = {grade.env_reward:g} (correctness {grade.correctness})"
