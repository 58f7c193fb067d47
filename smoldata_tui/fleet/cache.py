"""Per-trace results kept between runs, so a fleet reopens (and ``check`` re-runs) without
re-reading its traces.

One file per data folder, under the user's cache directory (never inside the data folder):
``$XDG_CACHE_HOME/smoldata-tui/<fleet|check>/<checksums of the folder's path>.json`` (default
``~/.cache``): one orjson line (the version, the folder, and per trace its key, its summary and
where its ``check`` line lies), then the ``check`` lines' bytes back to back, so loading them
decodes no escaped JSON text. An entry holds a summary (and for ``check`` its JSON line) and is
used only while the episode's files are those it was made from: the trace's and each sidecar's
size and mtime, or their absence (:func:`episode_key`), and only by the same tool version: the
package version plus a fingerprint of the sources that decide a result, so a changed analysis never
serves old answers. As git does with its index, an entry is not kept while any of its files changed
within the last :data:`SETTLE_S` seconds: a file rewritten in the same clock tick, same size, would
otherwise look unchanged. A damaged or foreign cache file is ignored (and replaced at the next
save), never an error.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
import zlib
from collections.abc import Container
from pathlib import Path

import orjson

from smoldata_tui import __version__
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.store.metadata import (
    METADATA_SUFFIX,
    PROXY_TRACE_NAME,
    REQUESTS_SUFFIX,
    TRAINING_SUFFIX,
    sibling_path,
)

CACHE_FORMAT = 3
# (size, mtime_ns) of the trace, then of each file beside it that a result reads, -1, -1 when absent
Key = tuple
KEYED_SUFFIXES = (METADATA_SUFFIX, REQUESTS_SUFFIX, TRAINING_SUFFIX)
SETTLE_S = 2.0
MAX_CACHE_FILES = 64  # per kind: the folders used last are kept, older ones removed at a save


def user_cache_dir(kind: str = "fleet") -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "smoldata-tui" / kind


def episode_key(trace: str, names: Container[str] | None = None) -> Key | None:
    """What a cached result of the trace at ``trace`` must match; None when it is not a regular
    file (gone, a FIFO…). ``names``: the names in the trace's folder, when the caller listed it
    (a sidecar not among them is not asked for)."""
    try:
        info = os.stat(trace)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = [info.st_size, info.st_mtime_ns]
    base = sibling_path(trace, "")  # the folder (with its slash) and the trace's stem
    start = base.rfind("/") + 1
    beside = [base + suffix for suffix in KEYED_SUFFIXES]
    beside.append(base[:start] + PROXY_TRACE_NAME)
    for path in beside:
        if names is not None and path[start:] not in names:
            key += (-1, -1)
            continue
        try:
            found = os.stat(path)
            key += (found.st_size, found.st_mtime_ns)
        except OSError:
            key += (-1, -1)
    return tuple(key)


def settled(key: Key, now_ns: int | None = None) -> bool:
    """Whether none of the key's files changed within the last SETTLE_S seconds."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    return max(key[1::2]) < now_ns - int(SETTLE_S * 1e9)


def tool_version() -> str:
    """The package version and a fingerprint of the sources that decide a summary: each one's
    name, size and mtime, in full (compared as text, so no change can collide with another)."""
    package = Path(__file__).resolve().parent.parent
    deciding = [*package.joinpath("trace").glob("*.py"), *package.joinpath("training").glob("*.py"),
                *package.joinpath("episode").glob("*.py"),
                package / "fleet" / "summary.py", package / "fleet" / "work.py", package / "fleet" / "cache.py",
                package / "store" / "metadata.py", package / "store" / "metadata_reader.py", package / "masking.py",
                package / "fleet" / "check.py"]  # fmt: skip
    sources = []
    for source in sorted(deciding):
        info = source.stat()
        sources.append(f"{source.parent.name}/{source.name}:{info.st_size}:{info.st_mtime_ns}")
    return f"{__version__}:{CACHE_FORMAT}+" + ",".join(sources)


def file_name(folder: str) -> str:
    """The cache file's name for a folder. zlib's two checksums, not hashlib's: loading OpenSSL
    was a fortieth of a cached re-run. Two folders that share a name share a file, whose
    ``folder`` field tells them apart: a lost entry, never a wrong one."""
    data = folder.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


class SummaryCache:
    """The cached results of one data folder: a summary per trace, and for ``check`` its line."""

    def __init__(self, folder: Path, cache_dir: Path | None = None, *, kind: str = "fleet") -> None:
        folder = Path(os.path.abspath(folder))
        self.folder = folder
        self.path = (cache_dir or user_cache_dir(kind)) / f"{file_name(str(folder))}.json"
        self.version = tool_version()
        self.entries: dict[str, tuple[Key, EpisodeSummary, bytes | None]] = {}
        self.dirty = False

    def load(self) -> None:
        try:
            raw = self.path.read_bytes()
            cut = raw.find(b"\n")
            data = orjson.loads(memoryview(raw)[: cut if cut >= 0 else len(raw)])
        except (OSError, orjson.JSONDecodeError):
            return
        if not (isinstance(data, dict) and data.get("version") == self.version and data.get("folder") == str(self.folder)):
            return
        entries = data.get("entries")
        if not isinstance(entries, dict) or cut < 0:
            return
        lines_start = cut + 1
        for path, entry in entries.items():
            try:
                key, row, offset, length = entry
                if not (isinstance(offset, int) and isinstance(length, int) and 0 <= length
                        and lines_start + offset + length <= len(raw)):  # fmt: skip
                    continue  # a damaged file: that entry is analysed again
                start = lines_start + offset
                line = raw[start : start + length] if offset >= 0 else None
                self.entries[path] = (tuple(key), EpisodeSummary.from_row(row), line)
            except (TypeError, ValueError):
                continue

    def get(self, path: str, key: Key) -> EpisodeSummary | None:
        entry = self.entries.get(path)
        return entry[1] if entry is not None and entry[0] == key else None

    def get_line(self, path: str, key: Key) -> tuple[EpisodeSummary, bytes] | None:
        """The summary and the ``check --json`` line kept for the trace, if both are still true."""
        entry = self.entries.get(path)
        if entry is None or entry[0] != key or entry[2] is None:
            return None
        return entry[1], entry[2]

    def put(self, path: str, key: Key, summary: EpisodeSummary, line: bytes | None = None) -> None:
        """Keep the result, unless a file of the key changed too recently to be told apart from
        a later change (then the entry made from older files is dropped too)."""
        if not settled(key):
            if self.entries.pop(path, None) is not None:
                self.dirty = True
            return
        self.entries[path] = (key, summary, line)
        self.dirty = True

    def forget(self, paths: set[str]) -> None:
        for path in paths:
            if self.entries.pop(path, None) is not None:
                self.dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written only costs the next start its speed."""
        if not self.dirty:
            return
        lines = bytearray()
        entries = {}
        for path, (key, summary, line) in self.entries.items():
            entries[path] = [list(key), summary.to_row(), len(lines) if line is not None else -1, len(line or b"")]
            lines += line or b""
        payload = orjson.dumps({"version": self.version, "folder": str(self.folder), "entries": entries}) + b"\n" + lines
        if write_cache_file(self.path, payload):
            self.dirty = False


def write_cache_file(path: Path, payload: bytes) -> bool:
    """Write atomically, then keep only the newest files of its kind; False when it could not be
    written (which only costs the next start its speed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".fleet-", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.replace(temporary, path)
    except OSError:
        return False
    _keep_newest(path.parent, MAX_CACHE_FILES)
    return True


def _keep_newest(directory: Path, count: int) -> None:
    """Remove all but the ``count`` most recently written cache files (a folder checked once, or a
    test's temporary folder, does not leave its cache forever)."""
    try:
        files = [(entry.stat().st_mtime_ns, entry.path) for entry in os.scandir(directory) if entry.name.endswith(".json")]
    except OSError:
        return
    for _, path in sorted(files, reverse=True)[count:]:
        try:
            os.remove(path)
        except OSError:
            pass
