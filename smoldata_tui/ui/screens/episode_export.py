"""Opening an ``opencode export`` document in the episode screen: its events, converted.

The timeline reads a JSON Lines file by byte offsets, so the converted events go to a
temporary file that lives as long as the screen. The verdict shown stays the training
wrapper's rule on the bytes of the file the user opened.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from smoldata_tui.trace import Verdict, analyze_path
from smoldata_tui.trace.export_doc import ExportDocument, sniff_export


@dataclass
class OpenedExport:
    document: ExportDocument
    converted: Path  # the temporary JSON Lines file the timeline follows
    verdict: Verdict  # of the original file's bytes

    def notice(self) -> str:
        return (f"{self.document.describe()}: shown converted ({len(self.document.events):,} events of its "
                f"assistant messages); the verdict is the wrapper's rule on the file itself")  # fmt: skip

    def close(self) -> None:
        shutil.rmtree(self.converted.parent, ignore_errors=True)


def open_export(path: Path) -> OpenedExport | None:
    """The export document at ``path`` converted to a temporary trace; None when it is no export."""
    document = sniff_export(path)
    if document is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="smoldata-export-"))
    converted = folder / (path.stem + ".converted.jsonl")
    converted.write_bytes(document.dumps())
    verdict = analyze_path(path)[0].verdict
    return OpenedExport(document, converted, verdict)
