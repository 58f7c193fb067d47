"""``smoldata-tui run --fork EPISODE --at-step N``: the options settled once, the endpoint of each
episode (a batch's k forks too), and the headless line's ``fork`` (session/fork.py does the work)."""

from __future__ import annotations

from smoldata_tui.session.episode_spec import EpisodeResult
from smoldata_tui.replay.model_endpoint import open_endpoint


def prepare_fork(args) -> None:
    """``--fork``: the parent, its task and the edit, settled once (k forks of a batch share them)."""
    from smoldata_tui.commands.run import UsageError, find_task
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


def fork_report(result: EpisodeResult) -> dict | None:
    """For a fork: its record and where it parts ways with its parent (the headless line's ``fork``)."""
    record = result.metadata.fork
    if not record:
        return None
    from smoldata_tui.replay.fork import fork_divergence

    return {**record, **fork_divergence(record["parent"], result.trace_path)}


def fork_line(fork: dict) -> str:
    """The headless run's last stderr line for a fork: where it parts ways with its parent."""
    if fork.get("error"):
        return f"[fork] against {fork['parent']}: not compared: {fork['error']}"
    if fork["identical"]:
        return f"[fork] against {fork['parent']}: no difference"
    return (f"[fork] against {fork['parent']}: first difference at step {fork['first_step']} "
            f"(forked at {fork['at_step']}); calls {fork['counts']}")
