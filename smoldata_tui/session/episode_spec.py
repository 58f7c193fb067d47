"""What an episode is asked to do and what it reports: the spec, the result, the stages (their
order per backend and harness), and where its files go. Shared by the runner and the screens."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from smoldata_tui.session.export import RecoveredCall
from smoldata_tui.store.metadata import EpisodeMetadata
from smoldata_tui.replay.model_endpoint import ModelEndpoint
from smoldata_tui.opencode.install import DEFAULT_OPENCODE_VERSION
from smoldata_tui.tasks import GradeResult, Task

STAGES = ("install OpenCode", "create sandbox", "stage task", "agent running", "recover calls", "grading")
# A remote sandbox exists before OpenCode can be looked for (and skipped) in its image.
REMOTE_STAGES = ("create sandbox", "install OpenCode", "stage task", "agent running", "recover calls", "grading")
# opencode_env's factory makes the sandbox inside its own setup (install check, config, proxy).
OPENCODE_ENV_STAGES = ("opencode_env setup", "create sandbox", "stage task", "agent running", "recover calls", "grading")
BACKENDS = ("local", "daytona")


CAPTURE_STAGE = "capture proxy"  # the built-in harness's, before the task is staged (not with --no-capture)


def stages_for(backend: str, harness: str = "builtin", capture: bool = False) -> tuple[str, ...]:
    if harness == "opencode-env":
        return OPENCODE_ENV_STAGES
    stages = STAGES if backend == "local" else REMOTE_STAGES
    if capture:
        at = stages.index("stage task")
        stages = (*stages[:at], CAPTURE_STAGE, *stages[at:])
    return stages


class EpisodeObserver(Protocol):
    """What the runner reports; called from the runner's thread."""

    def opened(self, trace_path: Path) -> None:
        """The episode's trace file exists (empty); the agent's log will be appended to it."""

    def stage(self, name: str, state: str, elapsed_s: float, message: str = "") -> None:
        """``state``: started / progress / done / failed / skipped."""

    def received(self, data: bytes) -> None:
        """New bytes of the agent's log, in order, already saved to the trace file."""


class EpisodeFailed(RuntimeError):
    """Infrastructure failed (not the agent): the stage and the reason, for one clear line."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


@dataclass
class EpisodeSpec:
    task: Task
    endpoint: ModelEndpoint
    backend: str = "local"
    timeout_s: float = 600.0
    save_dir: Path = Path("runs")
    opencode_version: str = DEFAULT_OPENCODE_VERSION
    opencode_bin: str | None = None
    harness: str = "builtin"
    daytona: object | None = None  # DaytonaSettings for backend "daytona" (None: from the environment)
    capture: bool = True  # the built-in harness's model traffic through openenv's capture proxy
    run_name: str | None = None  # the run folder's exact name inside save_dir (a batch's "<task>-<attempt>")
    sampling: dict | None = None  # training's sampling policy for the capture session (--sampling); None: engine defaults
    context_window: int | None = None  # --context-window: the served model's window (None: ask the endpoint)


@dataclass
class EpisodeResult:
    trace_path: Path
    metadata_path: Path
    metadata: EpisodeMetadata
    status: str  # finished / timeout / cancelled / killed / error
    exit_code: int | None = None
    grade: GradeResult | None = None
    recovered: list[RecoveredCall] = field(default_factory=list)
    divergences: list[dict] = field(default_factory=list)
    error: EpisodeFailed | None = None

    @property
    def graded(self) -> bool:
        """The grader gave a reward (a grader that failed, or an answer that could not be read, did not)."""
        return self.grade is not None and self.grade.env_reward is not None

    @property
    def exit_status(self) -> int:
        """``smoldata-tui run``'s exit status: 0 when the agent finished and its answer was graded
        (whatever the grade), 1 otherwise (timed out, cancelled, killed, an error, not graded)."""
        return 0 if self.status == "finished" and self.graded else 1


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_dir(save_dir: Path, task_name: str, exact: str | None = None) -> Path:
    if exact is not None:  # a batch names each episode's folder; a second run must not reuse it
        run_dir = save_dir / exact
        try:
            run_dir.mkdir(parents=True)
        except FileExistsError:
            raise EpisodeFailed("saving", f"{run_dir} already exists") from None
        return run_dir
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    for attempt in range(1000):
        run_dir = save_dir / (f"{stamp}-{task_name}" + ("" if attempt == 0 else f"-{attempt}"))
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            continue
    raise EpisodeFailed("saving", f"cannot make a new run folder in {save_dir}")
