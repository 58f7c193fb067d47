"""Episodes: the metadata saved beside a trace, and running one. No Textual here.

The names below are loaded when first asked for, as the trace package's are: ``check`` and the
fleet table import ``session.metadata`` for its constants, and its start-up is most of a cached
re-run's time.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "METADATA_SUFFIX": "metadata",
    "STATUSES": "metadata",
    "EpisodeMetadata": "metadata",
    "Grade": "metadata",
    "metadata_path_for": "metadata",
    "load_metadata": "metadata_reader",
    "save_metadata": "metadata_writer",
    "redact": "credentials",
    "redact_text": "credentials",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
