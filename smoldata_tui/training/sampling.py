"""Training's sampling policy for a live episode: ``--sampling temperature=T``.

A trainer's capture session leaves only the temperature free: openenv's ``training_sampling``
(``openenv.core.harness.capture.upstream``) sends top_p 1.0, top_k -1, min_p 0 and neutral
penalties with it and refuses any other value, because a processed logprob taken after truncation
or a penalty is not the full-vocabulary one the trainer recomputes. This parses the option and
asks openenv's own function, so the policy and its refusals are exactly openenv's; the session the
capture proxy mints carries the result (``capture_policy.mint_session``)."""

from __future__ import annotations

import math
from collections.abc import Iterable


class SamplingError(ValueError):
    """A ``--sampling`` value training's policy refuses; the message names the knob."""


def _number(knob: str, raw: str) -> float | int:
    try:
        value = int(raw)
    except ValueError:
        try:
            value = float(raw)
        except ValueError:
            raise SamplingError(f"--sampling {knob}: {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise SamplingError(f"--sampling {knob}: {raw!r} is not a finite number")
    return value


def parse_sampling(items: Iterable[str] | None) -> dict[str, float | int] | None:
    """``["temperature=0.3", "top_p=1.0"]`` (or ``"temperature=0.3,top_p=1"`` in one item) → the
    whole policy openenv's ``training_sampling`` sends; None when nothing was given."""
    given: dict[str, float | int] = {}
    for item in items or ():
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            knob, sep, raw = part.partition("=")
            knob = knob.strip()
            if not sep or not knob:
                raise SamplingError(f"--sampling takes KNOB=VALUE (e.g. temperature=0.7), not {part!r}")
            if knob in given:
                raise SamplingError(f"--sampling {knob} is given twice")
            given[knob] = _number(knob, raw.strip())
    if not given:
        return None
    from smoldata_tui.training.capture_policy import import_openenv

    upstream = import_openenv("openenv.core.harness.capture.upstream")
    try:  # the other knobs first, so a refused one is named even without a temperature
        policy = dict(upstream.training_sampling({"temperature": 1.0, **given}))
    except ValueError as exc:  # openenv's words name the knob: "training sampling requires top_p=1.0"
        raise SamplingError(f"--sampling: {exc}") from None
    if "temperature" not in given:
        raise SamplingError("--sampling needs temperature=T: training's policy leaves only the temperature free")
    return policy


def sampling_text(policy: dict | None) -> str:
    """The policy in one line, for stage logs and the launch form."""
    if not policy:
        return "engine defaults"
    return ", ".join(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}" for key, value in policy.items())
