"""``smoldata-tui run --fork EPISODE --at-step N``: the headless line's ``fork`` and its stderr line
(replay/fork.py does the work; ``episode_args.py`` settles the options and opens each endpoint)."""

from __future__ import annotations

from smoldata_tui.session.episode_spec import EpisodeResult


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
