"""Checking traces: each one's verdict, findings and summary (``smoldata-tui check``, the fleet's
groups screen).

Traces are analysed on every CPU (small ones in a process pool, a big one in parts: see
``fleet/pool.py`` and ``trace/parallel.py``); the output is in argument order and identical
to one process's (property-tested). A trace that cannot be read is reported in its place and
the others are still checked.

With ``use_cache`` (and ``as_json``) the results are cached between runs (``check_cache.py`` over
``fleet/cache.py``: one file per folder checked, under the user's cache directory; an entry is used
only while the trace and every file beside it that a result reads are unchanged, and only by the
same tool version), as linters keep theirs: CI re-checking a folder of thousands of episodes reads
only the new or changed ones.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import orjson

from smoldata_tui.fleet.checked import Checked, Listed
from smoldata_tui.fleet.listing import walk_traces
from smoldata_tui.fleet.summary import EpisodeSummary
from smoldata_tui.trace.file_kind import special_kind

if TYPE_CHECKING:
    from smoldata_tui.trace import TraceReport

# The engine and the process pool are imported where they are used: a re-run that the cache
# answers whole analyses nothing, and its start-up is most of its time.


@contextmanager
def lasting_objects():
    """Make objects that live as long as the command (the CLI's listing and cached results)
    without the cyclic collector, then freeze them out of its later passes (Python's gc docs'
    idiom for a parent about to fork): collecting them again and again took 13 % of a cached
    re-run's CPU, about 50 ms on 10,000 episodes. The command thaws them when it ends
    (``gc.unfreeze``), so a longer process that calls it (the tests) keeps no garbage frozen.
    Not for the TUI: freezing is process-wide."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        gc.enable()


class UsageError(Exception):
    """A bad argument or an unreadable path: exit status 2, one clear line."""


def collect_traces(arguments: list[str], err: TextIO | None = None) -> list[str]:
    return [listed.path for listed in list_traces(arguments, err)]


def list_traces(
    arguments: list[str], err: TextIO | None = None, *, use_cache: bool = False, missing: list[str] | None = None
) -> list[Listed]:
    """Files as given; directories expand to their traces by the fleet table's rules
    (:func:`~smoldata_tui.fleet.listing.walk_traces`: recursive, sorted, hidden names skipped,
    each file once). Only regular files are read: a FIFO or a device named as an argument is a
    usage error, one found in a directory is skipped with a line on ``err`` (reading it would
    block, or never end). ``use_cache``: folders unchanged since the last listing are not read
    again (``listing_memory.py``). A path that does not exist is a usage error, or with
    ``missing`` is added to it while the others are still listed (``check``: one missing path
    does not stop CI from checking the rest).
    """
    walk = walk_traces
    if use_cache:
        from smoldata_tui.fleet.listing_memory import walk_remembered as walk
    if not arguments:
        raise UsageError("give at least one trace file or directory")
    traces: list[Listed] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = []
            for trace in walk(argument):
                if trace.special is not None:
                    print(f"smoldata-tui check: skipped {trace.path}: {trace.special}, not a regular file", file=err or sys.stderr)
                else:
                    found.append(Listed(trace.path, argument, trace.relative, trace.names))
            if not found:
                raise UsageError(f"{argument}: no *.jsonl trace files in this directory")
            traces.extend(found)
        elif path.exists() or path.is_symlink():  # a broken link named as a file: its row says so
            kind = special_kind(path)
            if kind is not None:
                raise UsageError(f"{argument}: {kind}, not a regular file (save the stream to a file first)")
            traces.append(Listed.file(argument))
        elif missing is not None:
            missing.append(argument)
        else:
            raise UsageError(f"{argument}: no such file or directory")
    return traces


def json_line(path: str, report: TraceReport | None, summary: EpisodeSummary) -> bytes:
    if report is None:
        return orjson.dumps({"path": path, "error": summary.error}) + b"\n"
    return orjson.dumps({"path": path, **report.to_json()}) + b"\n"


def check_one(path: str, *, as_json: bool = False, with_metadata: bool = False, big: bool = False) -> Checked:
    """Analyse one trace (in parts on every CPU when ``big``); never raises for a bad file."""
    from smoldata_tui.fleet.work import analyze_trace

    report, summary = analyze_trace(path, big=big, with_metadata=with_metadata)
    if as_json:  # made here, in the worker: the parent only writes bytes
        return Checked(path, summary, line=json_line(path, report, summary))
    return Checked(path, summary, report=report)


def check_keyed(item: tuple[str, frozenset[str] | None], *, as_json: bool, with_metadata: bool, big: bool = False) -> Checked:
    """:func:`check_one` of ``item`` (its path and the names in its folder), with the cache key of
    its files taken before they are read: on a first run a worker takes it, not the parent alone."""
    from smoldata_tui.fleet.cache import episode_key

    path, names = item
    key = episode_key(path, names)
    result = check_one(path, as_json=as_json, with_metadata=with_metadata, big=big)
    result.key = key
    return result


def check_all(
    traces: list[str] | list[Path] | list[Listed],
    *,
    as_json: bool,
    with_metadata: bool,
    workers: int | None = None,
    use_cache: bool = False,
):
    """Every trace's :class:`Checked`, in the order given, computed on every CPU.

    ``use_cache`` (with ``as_json``, the CLI's): results of traces unchanged since they were last
    checked come from the cache (``check_cache.py``), made as :func:`lasting_objects`, and the
    others are kept there once computed.
    """
    listed = [item if isinstance(item, Listed) else Listed.file(str(item)) for item in traces]
    paths = [item.path for item in listed]
    cache = None
    hits = {}
    if use_cache and as_json:  # the CLI's: its results live as long as the command
        from smoldata_tui.fleet.check_cache import CheckCache

        with lasting_objects():
            cache = CheckCache(listed)
            hits = cache.lookup(listed)
        with_metadata = True  # a kept summary then serves --summary too
    todo = [index for index in range(len(paths)) if index not in hits]
    if todo:  # imported before the pool forks, so its workers share the parent's copy
        from smoldata_tui.fleet.pool import in_order
        from smoldata_tui.fleet.work import analyze_trace  # noqa: F401
        from smoldata_tui.trace.parallel import PARALLEL_MIN_BYTES
    big = {index for index in todo if _size(paths[index]) >= PARALLEL_MIN_BYTES}
    # A big trace is split across every CPU by its own pool, made first while this process
    # has no other pool (and no threads) to fork with.
    done = {index: check_keyed((paths[index], listed[index].names), as_json=as_json, with_metadata=with_metadata, big=True)
            for index in big}  # fmt: skip
    if cache is not None and cache.keys_wanted:
        small = [(paths[index], listed[index].names) for index in todo if index not in big]
        work = partial(check_keyed, as_json=as_json, with_metadata=with_metadata)
    else:
        small = [paths[index] for index in todo if index not in big]
        work = partial(check_one, as_json=as_json, with_metadata=with_metadata)
    results = in_order(work, small, workers=workers) if todo else iter(())
    for index in range(len(paths)):
        if index in hits:
            yield hits.pop(index)
            continue
        result = done.pop(index) if index in done else next(results)
        if cache is not None:
            cache.keep(index, listed[index], result)
        yield result
    if cache is not None:
        cache.save()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
