"""The folders of a fleet as ``check`` last listed them, kept between runs: a re-run reads again
only the folders that changed (their ctime), and asks the others one ``stat`` each instead of listing
them (reading 10,000 episode folders was a quarter of a cached re-run's time).

One file per folder checked, beside the check cache:
``$XDG_CACHE_HOME/smoldata-tui/listing/<checksums of the folder's path>.json``, one orjson object
(the format, the folder, and per sub-folder what :func:`~smoldata_tui.fleet.listing.walk_traces`
remembered). A damaged or foreign file is ignored and replaced, never an error.
"""

from __future__ import annotations

import os

import orjson

from smoldata_tui.fleet.cache import file_name, user_cache_dir, write_cache_file
from smoldata_tui.fleet.listing import Folders, TraceFile, walk_traces

LISTING_FORMAT = 1


def walk_remembered(root: str) -> list[TraceFile]:
    """:func:`walk_traces` of ``root``, with the folders listed last time, which it keeps."""
    folder = os.path.abspath(root)
    path = user_cache_dir("listing") / f"{file_name(folder)}.json"
    known = _load(path, folder)
    remember: Folders = {}
    try:
        traces = walk_traces(root, known, remember)
    except (TypeError, ValueError):  # a file of the right shape holding values of the wrong types
        known, remember = {}, {}
        traces = walk_traces(root, known, remember)
    if len(remember) != len(known) or any(remember[relative] is not known.get(relative) for relative in remember):
        write_cache_file(path, orjson.dumps({"format": LISTING_FORMAT, "folder": folder, "folders": remember}))
    return traces


def _load(path, folder: str) -> Folders:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not (isinstance(data, dict) and data.get("format") == LISTING_FORMAT and data.get("folder") == folder):
        return {}
    folders = data.get("folders")
    if not isinstance(folders, dict):
        return {}
    # (the types of what an entry holds are checked as it is used: see walk_remembered)
    return {relative: last for relative, last in folders.items() if type(last) is list and len(last) == 5}
