"""Writing ``run.meta.json`` so that a reader never sees half of one (a temporary file in the
same folder, synced, then renamed over the old one), and the one rewrite of a saved file: an
episode whose owner is gone marked ``interrupted``. The format is documented in
:mod:`smoldata_tui.store.metadata`."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from smoldata_tui.store.metadata import EpisodeMetadata, effective_status
from smoldata_tui.store.metadata_reader import load_metadata


def save_metadata(path: str | os.PathLike[str], metadata: EpisodeMetadata,
                  scrub: Callable[[str], str] | None = None) -> None:  # fmt: skip
    """Write atomically (a temporary file in the same folder, then a rename): a reader sees the
    old file or the new one, never half of one. The config is redacted on the way out, and the
    whole text passes ``scrub`` (the episode's :class:`SecretScrubber`) last."""
    payload = json.dumps(metadata.to_json(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_text_atomically(Path(path), scrub(payload) if scrub is not None else payload)


def write_text_atomically(path: Path, text: str) -> None:
    """A temporary file in the same folder, synced, then renamed over ``path``."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def mark_interrupted(path: str | os.PathLike[str]) -> bool:
    """Rewrite a saved episode whose owner is gone as ``interrupted``; True when it was one."""
    metadata = load_metadata(path)
    if metadata is None or metadata.status != "running" or effective_status(metadata) != "interrupted":
        return False
    metadata.status = "interrupted"
    metadata.stop_reason = metadata.stop_reason or "its process ended without saving (killed or crashed)"
    save_metadata(path, metadata)
    return True
