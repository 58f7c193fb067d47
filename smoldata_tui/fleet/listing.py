"""The traces below a folder: the one listing ``check`` and the fleet table both use.

The rules, as a user of git or ripgrep expects them:

* every ``*.jsonl`` that is not a sidecar (:func:`~smoldata_tui.store.metadata.is_trace_name`),
  in the order of ``sorted(Path(root).rglob("*.jsonl"))``: by path components;
* hidden files and folders (a name starting with ``.``) below the folder are skipped; the folder
  itself is walked whatever its name;
* a symbolic link to a folder is not followed (so no loop of links can make the walk endless);
* a symbolic link to a trace is listed, unless the file it leads to is listed already under
  another name (its own, or an earlier link's): a file is listed once;
* a symbolic link that leads nowhere (broken, or a loop) is listed: reading it fails, and that
  failure is the trace's row, with its reason (:func:`~smoldata_tui.fleet.summary.unreadable`);
* a FIFO, a socket or a device named like a trace is listed with ``special`` set: it is not read
  (reading it would block, or never end).

``os.scandir`` instead of ``rglob`` + a ``stat`` per file: the directory entries already say which
are regular files, and a fleet of thousands of episodes is listed several times faster. Only a
tree that holds symbolic links to traces pays a ``stat`` per trace, to list each file once.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from smoldata_tui.fleet.cache import SETTLE_S
from smoldata_tui.store.metadata import is_trace_name
from smoldata_tui.trace.file_kind import kind_of


@dataclass(slots=True)
class TraceFile:
    path: str  # the folder as given, joined with ``relative``
    relative: str  # the path within the folder, "/"-separated
    names: frozenset[str]  # the names in its own folder (whose sidecars a result reads)
    special: str | None = None  # "a FIFO (named pipe)"…: not a regular file, so not read
    link: bool = False  # a symbolic link


# A folder as last listed: (ctime_ns, inode, its names, its sub-folders, its traces), by its path
# within the root ("" for the root): see fleet/listing_memory.py.
Folders = dict


def walk_traces(root: str, known: Folders | None = None, remember: Folders | None = None) -> list[TraceFile]:
    """Every trace below ``root`` by the rules above, spelt as ``root`` + ``/`` + relative path.

    ``remember``: each folder's listing is put there; ``known``: the listings a previous walk put
    there. A known folder whose change time (ctime) and inode are unchanged is not read again:
    creating, removing or renaming a name in a folder changes its ctime, and so does a chmod or
    setting its mtime back (which the mtime alone would not show). A folder that holds a link or a
    special file is never remembered (where a link leads can change without its folder changing),
    nor one changed within SETTLE_S seconds (a change in the same clock tick keeps its ctime).
    """
    found: list[tuple[tuple[str, ...], TraceFile]] = []
    links = False
    settled_before = time.time_ns() - int(SETTLE_S * 1e9)

    def visit(directory: str, parts: tuple[str, ...]) -> None:
        nonlocal links
        # (os.path.join, one call per entry, was a third of listing a big fleet)
        prefix = (directory if directory.endswith("/") else directory + "/") if directory else ""
        if remember is not None:
            relative = "/".join(parts)
            try:
                info = os.stat(directory or ".")  # before reading it: a later change is a later ctime
            except OSError:
                return
            last = known.get(relative) if known else None
            if last is not None and last[0] == info.st_ctime_ns and last[1] == info.st_ino:
                remember[relative] = last
                names = frozenset(last[2])
                for name in last[4]:
                    found.append((parts + (name,), TraceFile(prefix + name, "/".join(parts + (name,)), names)))
                for name in last[3]:
                    visit(prefix + name, parts + (name,))
                return
        try:
            with os.scandir(directory or ".") as entries:
                listed = list(entries)
        except OSError:
            return
        names = frozenset(entry.name for entry in listed)
        folders: list[str] = []
        plain: list[str] | None = []  # its regular trace files, while it holds no link or special file
        for entry in listed:
            name = entry.name
            if name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir, plain = False, None
            if is_dir:
                folders.append(name)
                visit(prefix + name, parts + (name,))
                continue
            if not is_trace_name(name):
                continue
            path = prefix + name
            trace = TraceFile(path, "/".join(parts + (name,)), names)
            try:
                if entry.is_symlink():
                    trace.link = links = True
                    mode = os.stat(path).st_mode  # where it leads
                    plain = None
                elif entry.is_file(follow_symlinks=False):
                    mode = None
                    if plain is not None:
                        plain.append(name)
                else:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    plain = None
            except OSError:
                mode, plain = None, None  # broken, a loop, or gone meanwhile: listed, its read says why
            if mode is not None:
                kind = kind_of(mode)
                if kind == "a directory":
                    continue  # a link to a folder: not followed
                trace.special = kind
            found.append((parts + (name,), trace))
        if remember is not None and plain is not None and info.st_ctime_ns < settled_before:
            remember[relative] = (info.st_ctime_ns, info.st_ino, sorted(names), folders, plain)

    visit("" if root == "." else root, ())
    found.sort(key=lambda item: item[0])
    traces = [trace for _, trace in found]
    return _once_each(traces) if links else traces


def _once_each(traces: list[TraceFile]) -> list[TraceFile]:
    """Drop the links to a file listed under another name: its own first, else the first link's."""
    keys: dict[int, tuple[int, int] | None] = {}
    for number, trace in enumerate(traces):
        try:
            info = os.stat(trace.path)
            keys[number] = (info.st_dev, info.st_ino)
        except OSError:
            keys[number] = None
    owners = {keys[number] for number, trace in enumerate(traces) if not trace.link}
    kept = []
    for number, trace in enumerate(traces):
        key = keys[number]
        if trace.link and key is not None:
            if key in owners:
                continue
            owners.add(key)
        kept.append(trace)
    return kept
