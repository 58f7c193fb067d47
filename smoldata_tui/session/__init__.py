"""Episodes: the metadata saved beside a trace (and, later, running one). No Textual here."""

from smoldata_tui.session.credentials import redact, redact_text
from smoldata_tui.session.metadata import (
    METADATA_SUFFIX,
    STATUSES,
    EpisodeMetadata,
    Grade,
    metadata_path_for,
)
from smoldata_tui.session.metadata_reader import load_metadata
from smoldata_tui.session.metadata_writer import save_metadata

__all__ = [
    "METADATA_SUFFIX",
    "STATUSES",
    "EpisodeMetadata",
    "Grade",
    "load_metadata",
    "metadata_path_for",
    "redact",
    "redact_text",
    "save_metadata",
]
