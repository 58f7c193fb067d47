"""The tools each known OpenCode version offers the model under the environment's configuration.

The environment's ``opencode.json`` switches ``webfetch``, ``question`` and ``task`` off in
``tools`` and allows everything in ``permission`` (``{"*": "allow"}``); under that permission
OpenCode turns ``webfetch`` and ``task`` back on, so they are offered although disabled. Measured,
not assumed: the tool names of every request with tools in ``run.requests.jsonl`` of real replays
(``smoldata-tui opencode compare``, docs/opencode-upgrades.md, 2026-12-04). A version missing
here is unknown: nothing is compared for it.
"""

from __future__ import annotations

__all__ = ["OFFERED_WITH_ENVIRONMENT_CONFIG", "offered_tools"]

_MEASURED_1_18_31 = frozenset(
    {"bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write"}
)

OFFERED_WITH_ENVIRONMENT_CONFIG: dict[str, frozenset[str]] = {
    "1.18.31": _MEASURED_1_18_31,
    "1.18.32": _MEASURED_1_18_31,  # the same ten names, measured on 1.18.32 itself
    "1.18.33": _MEASURED_1_18_31,  # the same ten names, measured on 1.18.33 itself
}


def offered_tools(version: str | None) -> frozenset[str] | None:
    """The tool names ``version`` offers with the environment's configuration, None when unknown."""
    return OFFERED_WITH_ENVIRONMENT_CONFIG.get(version.strip()) if isinstance(version, str) else None
