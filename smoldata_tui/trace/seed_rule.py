"""The training wrapper's rule, transcribed literally from the environment's
``TaskSession.fetch_training_trace`` (SmolDataEnvs ``environment.py``).

This is the reference the fast engine is proven against (property tests) and
timed against (``bench/check_speed.py``). Keep it byte-for-byte faithful: do
not optimise it, do not "fix" it. The only additions are the ``bytes.decode()``
that the sandbox backend's ``fetch_trace()`` performs, and capturing the
exceptions the wrapper does *not* catch, so callers can say "training would
crash here" instead of crashing themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class SeedOutcome:
    """What the wrapper's code ends with for one trace."""

    calls: int | None
    caught: BaseException | None = None  # the exception turned into None
    crash: BaseException | None = None  # the exception that escapes the wrapper


def _fetch_training_trace(text_source) -> int | None:
    # --- literal copy of the seed's try-block, with `self.session.fetch_trace()`
    # --- replaced by `text_source()` ---
    events = [json.loads(line) for line in text_source().splitlines() if line.strip()]
    parts = [event["part"] for event in events if event.get("type") == "tool_use"]
    ids = [part["callID"] for part in parts]
    if not any(event.get("type") == "step_finish" for event in events):
        raise ValueError("Incomplete OpenCode event stream")
    if any(not value for value in ids) or len(set(ids)) != len(ids):
        raise ValueError("Missing or repeated tool action IDs")
    if any(part.get("state", {}).get("status") not in {"completed", "error"} for part in parts):
        raise ValueError("Unfinished tool action")
    return len(ids)


def seed_outcome(data: bytes) -> SeedOutcome:
    """Run the wrapper's rule on the raw bytes of an agent log."""
    try:
        calls = _fetch_training_trace(data.decode)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # the seed's except clause
        return SeedOutcome(calls=None, caught=exc)
    except Exception as exc:  # escapes the wrapper: training crashes
        return SeedOutcome(calls=None, crash=exc)
    return SeedOutcome(calls=calls)
