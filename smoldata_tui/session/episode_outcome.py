"""What an episode saves when it ends, whatever ended it: the divergence report beside the trace
(when there is one) and its metadata's final fields, written over the file saved at its start."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.session.episode_spec import EpisodeFailed, EpisodeResult, now_utc
from smoldata_tui.store.metadata import Grade
from smoldata_tui.store.metadata_writer import save_metadata


def save_outcome(result: EpisodeResult, stop_reason: str | None, scrub: Callable[[str], str]) -> None:
    """Save how ``result`` ended (``stop_reason``: what stopped it early, if anything), every
    text passed through ``scrub``."""
    _save_json(result.trace_path.with_name("run.divergence.json"), result.divergences, scrub)
    metadata = result.metadata
    metadata.status = result.status
    metadata.stop_reason = stop_reason
    metadata.exit_code = result.exit_code
    metadata.finished_at = now_utc()
    metadata.recovered_calls = [call.to_json() for call in result.recovered]
    if result.error is not None and result.status == "error":
        metadata.error = {"stage": result.error.stage, "message": result.error.reason}
    if result.grade is not None:
        metadata.grade = Grade(
            env_reward=result.grade.env_reward,
            correctness=result.grade.correctness,
            grader_output=result.grade.grader_output,
            grader_error=result.grade.grader_error,
        )
        metadata.caps_hit.extend(result.grade.caps_hit)
    save_metadata(result.metadata_path, metadata, scrub=scrub)


def note_release_failure(result: EpisodeResult, reason: str) -> None:
    """A sandbox that could not be removed ends the episode in error, whatever the agent and the
    grade did: its folder is left with the agent's files (and maybe the endpoint key), and a run
    that says "finished" would hide that. An earlier error keeps its stage; the reason is added."""
    said = f"the sandbox could not be removed: {reason}"
    if result.error is not None:
        result.error = EpisodeFailed(result.error.stage, f"{result.error.reason}; {said}")
    else:
        result.error = EpisodeFailed("release sandbox", said)
    result.status = "error"


def _save_json(path: Path, items: list, scrub: Callable[[str], str]) -> None:
    """Beside the trace, only when there is something to say."""
    if items:
        path.write_text(scrub(json.dumps(items, indent=2, ensure_ascii=False, default=str)) + "\n", encoding="utf-8")
