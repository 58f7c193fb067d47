"""Per-trace summaries kept between runs, so a fleet reopens without re-reading its traces.

One file per data folder, under the user's cache directory (never inside the data folder):
``$XDG_CACHE_HOME/smoldata-tui/fleet/<hash of the folder's path>.json`` (default ``~/.cache``),
orjson. An entry is used only while its trace's path, size and mtime, and its
``run.meta.json``'s size and mtime (or absence), are those it was made from, and only by the
same tool version: the package version plus a fingerprint of the engine's source files, so a
changed analysis never serves old answers. A damaged or foreign cache file is ignored (and
replaced at the next save), never an error.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import orjson

from smoldata_tui import __version__
from smoldata_tui.fleet.summary import EpisodeSummary

CACHE_FORMAT = 1
Key = tuple  # (trace size, trace mtime_ns, meta size or -1, meta mtime_ns or -1, training beside)


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smoldata-tui" / "fleet"


def tool_version() -> str:
    """The package version and a fingerprint of the sources that decide a summary."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"{__version__}:{CACHE_FORMAT}".encode())
    deciding = [*package.joinpath("trace").glob("*.py"), package / "fleet" / "summary.py", package / "fleet" / "work.py",
                package / "session" / "metadata.py"]  # fmt: skip
    for source in sorted(deciding):
        info = source.stat()
        digest.update(f"{source.name}:{info.st_size}:{info.st_mtime_ns}".encode())
    return f"{__version__}+{digest.hexdigest()[:16]}"


class SummaryCache:
    def __init__(self, folder: Path, cache_dir: Path | None = None) -> None:
        folder = Path(os.path.abspath(folder))
        self.folder = folder
        name = hashlib.sha256(str(folder).encode()).hexdigest()[:24]
        self.path = (cache_dir or user_cache_dir()) / f"{name}.json"
        self.version = tool_version()
        self.entries: dict[str, tuple[Key, EpisodeSummary]] = {}
        self.dirty = False

    def load(self) -> None:
        try:
            data = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if not (isinstance(data, dict) and data.get("version") == self.version and data.get("folder") == str(self.folder)):
            return
        entries = data.get("entries")
        if not isinstance(entries, dict):
            return
        for path, entry in entries.items():
            try:
                key, row = entry
                self.entries[path] = (tuple(key), EpisodeSummary.from_row(row))
            except (TypeError, ValueError):
                continue

    def get(self, path: str, key: Key) -> EpisodeSummary | None:
        entry = self.entries.get(path)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, path: str, key: Key, summary: EpisodeSummary) -> None:
        self.entries[path] = (key, summary)
        self.dirty = True

    def forget(self, paths: set[str]) -> None:
        for path in paths:
            if self.entries.pop(path, None) is not None:
                self.dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written only costs the next start its speed."""
        if not self.dirty:
            return
        payload = orjson.dumps(
            {
                "version": self.version,
                "folder": str(self.folder),
                "entries": {path: [list(key), summary.to_row()] for path, (key, summary) in self.entries.items()},
            }
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".fleet-", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(handle, "wb") as stream:
                stream.write(payload)
            os.replace(temporary, self.path)
        except OSError:
            return
        self.dirty = False
