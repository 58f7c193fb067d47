"""Child-process output made fit to show: secrets out first, then cut, then made inert."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smoldata_tui.tasks.envvars import redact
from smoldata_tui.trace.text import neutralize


def keep_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters (where a failing script says why), marked when cut."""
    if len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters cut]\n" + text[-limit:]


def safe_tail(text: str, secrets: Mapping[str, str], limit: int) -> str:
    """For messages: redacted before cutting (a cut could keep half a secret), controls shown."""
    return neutralize(keep_tail(redact(text, secrets).strip(), limit))


def redact_json(value: Any, secrets: Mapping[str, str]) -> Any:
    """A parsed JSON value with secrets redacted in every string (numbers and booleans kept)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [redact_json(item, secrets) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item, secrets) for key, item in value.items()}
    return value
