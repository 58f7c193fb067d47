"""Episodes: the metadata saved beside a trace, and running one. No Textual here.

The names below are loaded when first asked for, as the trace package's are: ``check`` and the
fleet table import ``session.metadata`` for its constants, and a cached re-run of ``check`` is
mostly start-up.
"""

from __future__ import annotations

from smoldata_tui.lazy_names import lazy_getattr

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
__getattr__ = lazy_getattr(__name__, _HOMES, globals())
