"""What ``smoldata-tui run``'s arguments ask for: the options checked before any work (a usage
error is exit 2 with one line), the task found, ``--fork`` settled, and the model endpoint opened:
one episode's :class:`~smoldata_tui.session.episode.EpisodeSpec` (a batch's too, one per episode).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

from smoldata_tui.replay.model_endpoint import open_endpoint
from smoldata_tui.session.episode import EpisodeSpec
from smoldata_tui.tasks.errors import UnknownTask
from smoldata_tui.tasks.listing import find_task as find_task_in_set
from smoldata_tui.training.sampling import SamplingError, parse_sampling


class UsageError(Exception):
    """Bad arguments: exit 2 with this message."""


def find_task(name: str, tasks_dir: str | None):
    """:func:`~smoldata_tui.tasks.listing.find_task`, a name that is no task of the set a usage error."""
    try:
        return find_task_in_set(name, tasks_dir)
    except UnknownTask as exc:
        raise UsageError(str(exc)) from None


def _check_timeout(seconds: float) -> float:
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, not {seconds:g}")
    return seconds


def _check_save_dir(folder: str) -> Path:
    """The folder episodes are saved in, made and proven writable now: not after the agent ran."""
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--save {folder}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe, name = tempfile.mkstemp(prefix=".smoldata-write-test-", dir=path)
        os.close(probe)
        os.unlink(name)
    except OSError as exc:
        raise UsageError(f"--save {folder}: cannot write there ({exc.strerror or exc})") from None
    return path


# Options whose empty value would quietly mean something else (the current folder, the default).
TEXT_OPTIONS = ("tasks", "save", "model", "base_url", "opencode_version", "opencode_bin", "daytona_snapshot",
                "daytona_target")  # fmt: skip
DAYTONA_RESOURCES = {"daytona_cpu": "cpu", "daytona_memory": "memory_gb", "daytona_disk": "disk_gb"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_text_options(args) -> None:
    """A blank value is a mistake, not a request for the default: say so before any work."""
    if any(not name.strip() for name in getattr(args, "task", None) or []):
        raise UsageError("--task is empty: give a task folder's name (`smoldata-tui tasks` lists them)")
    for name in TEXT_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            raise UsageError(f"{_flag(name)} is empty: give it a value, or leave it out for its default")
    version = getattr(args, "opencode_version", None)
    if version is not None:
        from smoldata_tui.opencode.install import OpenCodeInstallError, _checked_version

        try:
            _checked_version(version)
        except OpenCodeInstallError as exc:
            raise UsageError(f"--opencode-version: {exc}") from None


def check_counts(args) -> None:
    """``--attempts`` and ``--concurrency``, where given, are at least 1: for a batch and for one
    episode alike (one episode ignores --concurrency, but a bad value is still a mistake)."""
    for name in ("attempts", "concurrency"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UsageError(f"{_flag(name)} must be at least 1, not {value}")


def _positive_int(flag: str, raw: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{flag} must be a positive whole number, not {raw!r}")
    return value


def daytona_settings(args):
    """The Daytona sandbox the options ask for; raises UsageError for a missing key, an unusable
    ``DAYTONA_API_URL``, resources that are no positive integers or that a snapshot would ignore."""
    from smoldata_tui.sandbox.daytona.settings import DaytonaCredentialsMissing, DaytonaSettings, api_url_problem, has_api_key

    if not has_api_key():  # before any work: no sandbox, no install, no model endpoint
        raise UsageError(str(DaytonaCredentialsMissing()))
    if (problem := api_url_problem()) is not None:
        raise UsageError(problem)
    resources = {field: _positive_int(_flag(name), raw) for name, field in DAYTONA_RESOURCES.items()
                 if (raw := getattr(args, name, None)) is not None}  # fmt: skip
    settings = DaytonaSettings.from_environment(snapshot=getattr(args, "daytona_snapshot", None),
                                                target=getattr(args, "daytona_target", None), **resources)  # fmt: skip
    if resources and settings.snapshot:
        flags = ", ".join(_flag(name) for name in DAYTONA_RESOURCES if getattr(args, name, None) is not None)
        raise UsageError(f"{flags}: a sandbox made from snapshot {settings.snapshot!r} has the snapshot's resources "
                         "(the snapshot comes from --daytona-snapshot, $DATA_AGENT_DAYTONA_SNAPSHOT or $DAYTONA_SNAPSHOT)")
    return settings


def episode_spec(args, task_name: str | None = None) -> EpisodeSpec:
    """The episode the arguments describe (``task_name``: one of a batch's); raises TaskError,
    EndpointError or UsageError."""
    timeout_s = _check_timeout(args.timeout)
    check_text_options(args)
    task = find_task(task_name if task_name is not None else args.task, args.tasks)
    daytona = None
    if args.backend == "daytona":
        daytona = daytona_settings(args)
    elif given := [_flag(name) for name in (*DAYTONA_RESOURCES, "daytona_target", "daytona_snapshot")
                   if getattr(args, name, None) is not None]:  # fmt: skip
        raise UsageError(f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'} with --backend daytona")
    harness = getattr(args, "harness", "builtin")
    if harness == "opencode-env":
        from smoldata_tui.session.opencode_env_harness import HarnessUnavailable, require_opencode_env

        try:
            require_opencode_env()
        except HarnessUnavailable as exc:
            raise UsageError(str(exc)) from None
    sampling = _sampling_policy(args, harness)
    context_window = _context_window(args, harness)
    save_dir = _check_save_dir(args.save)
    endpoint = open_model_endpoint(args)
    return EpisodeSpec(
        task=task,
        endpoint=endpoint,
        backend=args.backend,
        timeout_s=timeout_s,
        save_dir=save_dir,
        opencode_version=args.opencode_version,
        opencode_bin=args.opencode_bin,
        daytona=daytona,
        harness=harness,
        capture=not getattr(args, "no_capture", False),
        sampling=sampling,
        context_window=context_window,
    )


def _context_window(args, harness: str) -> int | None:
    """``--context-window N``: recorded in the capture record, which --no-capture has not."""
    raw = getattr(args, "context_window", None)
    if raw is None:
        return None
    if getattr(args, "no_capture", False) or harness == "opencode-env":
        raise UsageError("--context-window is recorded by the capture proxy: it cannot be used with "
                         + ("--no-capture" if getattr(args, "no_capture", False) else "--harness opencode-env"))
    return _positive_int("--context-window", raw)


def _sampling_policy(args, harness: str) -> dict | None:
    """Training's sampling policy from ``--sampling``; it is applied by the capture proxy's session,
    so without that proxy it is a usage error, not a policy silently dropped or half sent."""
    items = getattr(args, "sampling", None)
    if not items:
        return None
    if getattr(args, "no_capture", False) or harness == "opencode-env":
        flag = "--no-capture" if getattr(args, "no_capture", False) else "--harness opencode-env"
        raise UsageError(f"--sampling is applied by the capture proxy, as in training: it cannot be used with {flag}")
    try:
        return parse_sampling(items)
    except SamplingError as exc:
        raise UsageError(str(exc)) from None


def prepare_fork(args) -> None:
    """``--fork``: the parent, its task and the edit, settled once (k forks of a batch share them)."""
    from smoldata_tui.replay.fork import ForkError, check_step, load_parent, prepare_edit
    from smoldata_tui.tasks import TaskError

    if not getattr(args, "fork", None):
        if getattr(args, "at_step", None) is not None or getattr(args, "edit", False):
            raise UsageError("--at-step and --edit go with --fork EPISODE")
        return
    if args.at_step is None:
        raise UsageError("--fork needs --at-step N: the first step the model answers (steps count from 1)")
    if args.all or len(args.task or []) > 1:
        raise UsageError("--fork runs the parent's task: no --all, at most one --task (for a parent without run.meta.json)")
    try:
        parent = load_parent(args.fork)
        check_step(parent, args.at_step)
        name = (args.task or [parent.task])[0]
        if not name:
            raise ForkError(f"--fork {args.fork}: no run.meta.json names its task: pass --task NAME")
        if parent.task and name != parent.task:
            raise ForkError(f"--fork {args.fork}: the parent ran task {parent.task!r}, not {name!r}")
        args.task = [name]
        args.model = args.model or parent.model  # the parent's model by default
        args.fork_parent = parent
        args.fork_edit = prepare_edit(parent, args.at_step, find_task(name, args.tasks).instruction) if args.edit else None
    except (ForkError, TaskError) as exc:
        raise UsageError(str(exc)) from None


def open_model_endpoint(args):
    """The endpoint of one episode: the model, or for ``--fork`` the fork's (prepare_fork first)."""
    parent = getattr(args, "fork_parent", None)
    if parent is None:
        return open_endpoint(model=args.model, base_url=args.base_url, api_key=args.api_key)
    from smoldata_tui.replay.fork import open_fork_endpoint

    return open_fork_endpoint(parent, args.at_step, model=args.model, base_url=args.base_url, api_key=args.api_key,
                              edit=args.fork_edit)  # fmt: skip
