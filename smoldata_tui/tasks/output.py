"""Child-process output made fit to show: secrets out first, then cut, then made inert."""

from __future__ import annotations

from collections.abc import Mapping

from smoldata_tui.masking import redact_secrets
from smoldata_tui.trace.text import neutralize


def keep_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters (where a failing script says why), marked when cut."""
    if len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters cut]\n" + text[-limit:]


def safe_tail(text: str, secrets: Mapping[str, str], limit: int) -> str:
    """For messages: redacted before cutting (a cut could keep half a secret), controls shown."""
    return neutralize(keep_tail(redact_secrets(text, secrets).strip(), limit))
